import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler } from "express";
import type { Logger } from "pino";
import { AppError, codeOf, errorFields, statusOf, StoreUnavailable, type ErrorCode } from "../domain/errors.ts";
import { Throttled } from "../services/verification/throttle.ts";
import type { JsonText } from "./verification/json-text.ts";

/** The challenge of a 401 (RFC 6750) that says no more than the realm. */
export const BEARER_CHALLENGE = 'Bearer realm="keyplane"';

// Every error leaves as {"status", "error", "message"} (docs/api.md, "Errors"), through these two functions.
export function sendError(res: ServerResponse, code: ErrorCode, message: string): void {
  const status = statusOf(code);
  const body = errorBody(code, message);
  if (status === 401 && !res.hasHeader("WWW-Authenticate")) res.setHeader("WWW-Authenticate", BEARER_CHALLENGE);
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

// The 401 bodies of the paths answered before express, made once per message: the messages are the
// code's own constants, so there are few of them.
const refusalBodies = new Map<string, JsonText>();

/**
 * A 401 of the paths answered before express (GET /keys/self, /auth), sent as they send their 200s
 * (sendJsonText): every header in one writeHead, the body made once. A flood of bad tokens is
 * answered thus, and a header set before writeHead makes Node merge the two, header by header.
 */
export function sendUnauthorized(res: ServerResponse, challenge: string, message: string, reqId: string): void {
  let body = refusalBodies.get(message);
  if (!body) {
    const text = errorBody("unauthorized", message);
    refusalBodies.set(message, (body = { text, length: Buffer.byteLength(text) }));
  }
  res.writeHead(401, { "Content-Type": "application/json; charset=utf-8", "Content-Length": body.length, "WWW-Authenticate": challenge, "X-Request-Id": reqId });
  res.end(body.text);
}

/** The body of every error answer. */
export function errorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ status: statusOf(code), error: code, message });
}

/** The error an express body parser reports, by its `type`. */
function parserError(error: { type?: string; status?: number }): [ErrorCode, string] | undefined {
  switch (error.type) {
    case "entity.too.large":
      return ["payload_too_large", "The request body is larger than 16 KiB."];
    case "entity.parse.failed":
      return ["bad_request", "The request body is not valid JSON."];
    case "encoding.unsupported":
    case "charset.unsupported":
      return ["unsupported_media_type", "The request body's encoding or charset is not supported."];
    case "request.aborted":
    case "request.size.invalid":
    case "stream.encoding.set":
      return ["bad_request", "The request body could not be read."];
  }
  return undefined;
}

/** Answers any error thrown while serving a request: the caller's own, or the service's. */
export function answerError(res: ServerResponse, error: unknown, log: Logger, reqId: string): void {
  // Answered already, in full (a request cut short by a time-out): nothing is left to tell anyone.
  if (res.writableEnded) return;
  if (res.headersSent) {
    log.error({ err: errorFields(error), reqId }, "failed after the answer began");
    res.destroy();
    return;
  }
  if (error instanceof StoreUnavailable) log.warn({ reason: error.reason, reqId }, "database unavailable");
  if (error instanceof Throttled) res.setHeader("Retry-After", String(error.retryAfter));
  if (error instanceof AppError) return sendError(res, error.code, error.message);
  const parsed = parserError(error as { type?: string });
  if (parsed) return sendError(res, ...parsed);
  // Other client errors raised by express itself (a path segment that is not valid percent-encoding).
  const status = (error as { status?: unknown }).status;
  const code = typeof status === "number" && status >= 400 && status < 500 ? codeOf(status) : undefined;
  if (code) return sendError(res, code, "The request could not be understood.");
  log.error({ err: errorFields(error), reqId }, "unexpected error");
  sendError(res, "internal", "An unexpected error occurred.");
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => answerError(res, error, log, req.id);
}
