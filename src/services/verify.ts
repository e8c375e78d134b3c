import { mayReach } from "../domain/access.ts";
import { keyState } from "../domain/key-state.ts";
import type { StoredKey } from "../domain/model.ts";
import { normalizePath, platformTarget } from "../domain/platform-path.ts";
import { levelOf, scopeOf, type Level } from "../domain/scope.ts";
import { isTokenFormat, tokenHash } from "../domain/token.ts";
import type { Context } from "./context.ts";
import { resolvePathScope } from "./path-scope.ts";

// Verification for the rest of the platform (docs/api.md, "Verification"): may this token do this
// method on this path? One answer for POST /verify and /auth, by the level rules of domain/access.ts.
export const VERDICT_CODES = ["VALID", "MALFORMED", "UNKNOWN", "DISABLED", "EXPIRED", "FORBIDDEN"] as const;
type VerdictCode = (typeof VERDICT_CODES)[number];

export type Verdict =
  | { code: Extract<VerdictCode, "VALID" | "FORBIDDEN">; key: StoredKey; level: Level }
  | { code: Exclude<VerdictCode, "VALID" | "FORBIDDEN"> };

export interface VerifyRequest {
  token: string | undefined;
  /** The original request's method, upper-case. */
  method: string;
  /** The original request's path (a query is ignored); undefined: no path to check. */
  path: string | undefined;
}

export async function verifyRequest(ctx: Context, req: VerifyRequest): Promise<Verdict> {
  if (req.token === undefined || !isTokenFormat(req.token)) return { code: "MALFORMED" };
  const key = await ctx.keyCache.lookup(tokenHash(req.token));
  if (!key) return { code: "UNKNOWN" };
  const now = ctx.clock();
  const state = keyState(key, now);
  if (state === "expired") return { code: "EXPIRED" };
  if (state === "disabled") return { code: "DISABLED" };
  // A usable key has authenticated, whatever the path's verdict: its last use moves (in batches).
  ctx.lastUse.record(key, now);
  const caller = scopeOf(key);
  const level = levelOf(caller);
  if (req.path === undefined) return { code: "VALID", key, level };
  const segments = normalizePath(req.path);
  if (!segments) return { code: "FORBIDDEN", key, level };
  const { refs, atApplication } = platformTarget(segments);
  const named = Object.keys(refs).length === 0 ? undefined : await resolvePathScope(ctx, refs, caller);
  if (Object.keys(refs).length > 0 && !named) return { code: "FORBIDDEN", key, level };
  return { code: mayReach(caller, named, req.method, atApplication) ? "VALID" : "FORBIDDEN", key, level };
}
