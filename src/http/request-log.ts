import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request } from "express";
import type { Logger } from "pino";
import type { Metrics } from "../services/operations/metrics.ts";
import "./request.ts";

/** The header that carries a request's id, and that every answer echoes. */
export const REQUEST_ID = "X-Request-Id";

/**
 * The request's id: its X-Request-Id when sane, else a new one. The answer must echo it: express's
 * through setHeader; the fast paths pass it to writeHead with their other headers (a header set before
 * writeHead makes Node merge the two, header by header), and echo it thus on an error.
 */
export function requestId(req: IncomingMessage): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : newRequestId();
}

// A new id is this process's own 64 random bits and the request's number in it (docs/api.md, "Logs"):
// unique within the process, and across processes unless two of them draw the same 64 bits. A random
// UUID per request cost several times as much, in time and in garbage, on a path that answers in
// microseconds.
const PROCESS_ID = randomBytes(8).toString("hex");
let requestNumber = 0;

function newRequestId(): string {
  return `${PROCESS_ID}-${(++requestNumber).toString(16)}`;
}

/** Echoes the request id on an answer that writeHead does not write with it: an error. */
export function echoRequestId(res: ServerResponse, reqId: string): ServerResponse {
  if (!res.headersSent) res.setHeader(REQUEST_ID, reqId);
  return res;
}

/** What a handler outside express tells the request log: its route, and the calling key once known. */
export interface Answering {
  route: string;
  key?: number;
}

/**
 * Logs the request once it has been answered, by the pattern of the route that answered it
 * (`/customers/:customer/keys`) and the numeric id of the calling key, never its path, query or
 * token: those can hold a token in any spelling. Express sets `req.route` and `req.principal`; other
 * handlers pass `answering`; no route is "unmatched". The same route labels the request's metrics.
 */
export function logWhenAnswered(ctx: { log: Logger; metrics?: Metrics | undefined }, req: IncomingMessage, res: ServerResponse, reqId: string, answering?: Answering): void {
  const { log, metrics } = ctx;
  const logging = log.isLevelEnabled("info");
  if (!logging && !metrics) return;
  const startedAt = performance.now();
  // "finish" comes once per response: a plain listener spares the wrapper once() adds on every request.
  res.on("finish", () => {
    const elapsed = performance.now() - startedAt;
    const routed = req as Partial<Pick<Request, "route" | "principal">>;
    const route = answering?.route ?? (routed.route as { path?: string } | undefined)?.path ?? "unmatched";
    metrics?.request(req.method, route, res.statusCode, elapsed / 1000);
    if (!logging) return;
    const key = answering ? answering.key : routed.principal?.key.id;
    log.info({ reqId, method: req.method, route, key, status: res.statusCode, ms: Number(elapsed.toFixed(2)) }, "request");
  });
}
