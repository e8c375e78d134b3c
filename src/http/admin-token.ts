import { createHash, timingSafeEqual } from "node:crypto";
import { bearerToken } from "../services/verification/authenticate.ts";

/** Whether the header carries the admin token; compared in constant time (over digests of equal length). */
export function isAdminToken(header: string | undefined, adminToken: string): boolean {
  const given = bearerToken(header);
  if (given === undefined) return false;
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(given), digest(adminToken));
}
