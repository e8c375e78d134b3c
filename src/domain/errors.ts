// The one catalogue of error codes the API answers with (docs/api.md, "Errors").
export type ErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "request_timeout"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "usage_exceeded"
  | "internal"
  | "bad_gateway"
  | "unavailable";

export function statusOf(code: ErrorCode): number {
  switch (code) {
    case "bad_request":
      return 400;
    case "unauthorized":
      return 401;
    case "forbidden":
      return 403;
    case "not_found":
      return 404;
    case "method_not_allowed":
      return 405;
    case "conflict":
      return 409;
    case "request_timeout":
      return 408;
    case "payload_too_large":
      return 413;
    case "unsupported_media_type":
      return 415;
    case "rate_limited":
    case "usage_exceeded":
      return 429;
    case "internal":
      return 500;
    case "bad_gateway":
      return 502;
    case "unavailable":
      return 503;
  }
}

const CODES: ErrorCode[] = [
  "bad_request", "unauthorized", "forbidden", "not_found", "method_not_allowed", "request_timeout", "conflict", "payload_too_large",
  "unsupported_media_type", "rate_limited", "usage_exceeded", "internal", "bad_gateway", "unavailable",
];

/** The catalogue's code for an HTTP status, if it has one. */
export function codeOf(status: number): ErrorCode | undefined {
  return CODES.find((code) => statusOf(code) === status);
}

/** An error that is meant for the caller: its message is safe to show. */
export class AppError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "AppError";
    this.code = code;
  }

  get status(): number {
    return statusOf(this.code);
  }
}

/**
 * An error as a log line may show it: its kind, code, message and stack, and for a failed statement
 * its SQL text (`statement`, set by the store), never its other fields (a driver's error may carry its
 * connection or the statement's parameters, a parser's the request body).
 */
export function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code, statement } = error as { code?: unknown; statement?: unknown };
  return {
    type: error.name,
    ...(typeof code === "string" || typeof code === "number" ? { code } : {}),
    ...(typeof statement === "string" ? { statement } : {}),
    message: error.message,
    stack: error.stack,
  };
}

export const UNAUTHORIZED = "A valid, active API key is required.";
export const unauthorized = (message = UNAUTHORIZED) =>
  new AppError("unauthorized", message);
export const notFound = (message: string) => new AppError("not_found", message);
export const conflict = (message: string) => new AppError("conflict", message);
export const badRequest = (message: string) => new AppError("bad_request", message);
export const forbidden = (message: string) => new AppError("forbidden", message);

// The store's failures, as the rest of keyplane sees them: the store translates its drivers' errors
// into these, in its one query wrapper, so nothing outside it knows SQLSTATEs or driver messages.

/** The database cannot be reached (refused, reset, timed out, shutting down): unavailable, not broken. */
export class StoreUnavailable extends AppError {
  /** The driver's or the server's code, for the log. */
  readonly reason: string;

  constructor(reason: string) {
    super("unavailable", "The key store is unavailable; try again shortly.");
    this.name = "StoreUnavailable";
    this.reason = reason;
  }
}

/** A write that a unique index refused: the thing already exists. */
export class UniqueViolation extends Error {
  constructor() {
    super("a unique index refused the write");
    this.name = "UniqueViolation";
  }
}
