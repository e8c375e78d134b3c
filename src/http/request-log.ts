import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";

/** The request's id: its X-Request-Id when sane, else a new one; echoed in the answer. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers["x-request-id"];
  const id = typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  res.setHeader("X-Request-Id", id);
  return id;
}

/**
 * Logs the request once it has been answered, by the pattern of the route that answered it
 * (`/customers/:customer/keys`), never its path or query: those can hold a token in any spelling.
 * `route` is given by handlers outside express; express sets `req.route`; no route is "unmatched".
 */
export function logWhenAnswered(log: Logger, req: IncomingMessage, res: ServerResponse, reqId: string, route?: string): void {
  if (!log.isLevelEnabled("info")) return;
  const startedAt = performance.now();
  res.once("finish", () => {
    const ms = Number((performance.now() - startedAt).toFixed(2));
    const pattern = route ?? (req as { route?: { path?: string } }).route?.path ?? "unmatched";
    log.info({ reqId, method: req.method, route: pattern, status: res.statusCode, ms }, "request");
  });
}
