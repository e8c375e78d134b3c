import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { authenticate } from "../services/authenticate.ts";
import type { Context } from "../services/context.ts";
import { answerError } from "./errors.ts";
import { callerKeyJson } from "./present.ts";
import { logWhenAnswered, requestId } from "./request-log.ts";

// GET /keys/self is how clients check a key, and checking keys is what keyplane does most: it is
// answered here, before express, from the verification cache (see docs/adr/0004). Everything else,
// and any /keys/self request that is not a plain GET, goes on to `next`. The express route of the same
// path stays: it describes the operation in /openapi.json and answers the other methods.
const SELF = /^\/(api)?keys\/self\/?(\?|$)/;

export function withSelfFastPath(ctx: Context, next: RequestListener): RequestListener {
  return (req, res) => {
    if (req.method !== "GET" || !SELF.test(req.url ?? "") || hasBody(req)) return next(req, res);
    const reqId = requestId(req, res);
    logWhenAnswered(ctx.log, req, res, reqId);
    authenticate(ctx, req.headers.authorization).then(
      (principal) => sendJson(res, JSON.stringify(callerKeyJson(principal))),
      (error: unknown) => answerError(res, error, ctx.log, reqId),
    );
  };
}

function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
}

function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}
