import type { IncomingMessage } from "node:http";

/** Whether a request carries a body at all. */
export function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
}

/** Whether a request says its body is JSON (application/json or application/<anything>+json). */
export function isJson(req: IncomingMessage): boolean {
  return /^application\/([a-z0-9.+-]*\+)?json$/i.test((req.headers["content-type"] ?? "").split(";")[0]!.trim());
}

/** The largest request body keyplane reads (docs/api.md, "Errors"). */
export const BODY_LIMIT = 16 * 1024;
