import { StoreUnavailable, UniqueViolation } from "../domain/errors.ts";

// The one place that reads the drivers' errors (node-postgres and PGlite): a refused unique index, or
// a database that cannot be reached, become the typed errors of domain/errors.ts; anything else (a
// defect, a check constraint) goes on as it is.
const UNIQUE_VIOLATION = "23505";
// The server ending a session: shut down or pg_terminate_backend (57P01), a crash elsewhere (57P02),
// idle_session_timeout (57P05), idle_in_transaction_session_timeout (25P03); or the socket under it going.
const SESSION_ENDED_CODES = new Set(["57P01", "57P02", "57P05", "25P03", "ECONNRESET", "EPIPE"]);
const SESSION_ENDED_MESSAGES = /Connection terminated unexpectedly|Client has encountered a connection error/i;
// A server that does not take writes (25006, read_only_sql_transaction: a standby, a primary made
// read-only, or a connection that found itself on one) is not the database keyplane writes to: it
// cannot be reached, as much as a server that is down (docs/high-availability.md).
const UNREACHABLE_CODES = new Set([...SESSION_ENDED_CODES, "ECONNREFUSED", "ETIMEDOUT", "ENOTFOUND", "EHOSTUNREACH", "57P03", "53300", "25006"]);
const UNREACHABLE_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|PGlite is closed|pool after calling end|Query read timeout/i;
// 57P05 ends a session only while it waits for a command, and PostgreSQL checks for it once more after
// reading one and before running it: a statement that met it never ran.
const NEVER_RAN_CODE = "57P05";
// Statements that change nothing: sent twice, they do what one does.
const CHANGES_NOTHING = /^\s*(SELECT|BEGIN)\b/i;

function fieldsOf(error: unknown): { code: string; message: string } {
  const e = error as { code?: unknown; message?: unknown } | null;
  return { code: typeof e?.code === "string" ? e.code : "", message: typeof e?.message === "string" ? e.message : "" };
}

export function translateError(error: unknown): unknown {
  if (error instanceof StoreUnavailable || error instanceof UniqueViolation) return error;
  const { code, message } = fieldsOf(error);
  if (code === UNIQUE_VIOLATION) return new UniqueViolation();
  if (UNREACHABLE_CODES.has(code) || code.startsWith("08")) return new StoreUnavailable(code);
  if (UNREACHABLE_MESSAGES.test(message)) return new StoreUnavailable(message.slice(0, 80));
  return error;
}

/** Whether `error` (as the driver threw it) says the connection is gone, while the server may well answer on another. */
export function sessionEnded(error: unknown): boolean {
  const { code, message } = fieldsOf(error);
  return SESSION_ENDED_CODES.has(code) || SESSION_ENDED_MESSAGES.test(message);
}

/**
 * Whether `statement`, failed with `error`, may be sent once more on another connection: when its
 * connection went, and either the statement changes nothing or the server says it never ran. A write
 * whose connection went under it may have been committed first, so it is never sent again: its caller
 * answers 503, and docs/api.md tells clients that such a write may or may not have taken effect.
 */
export function mayRetry(error: unknown, statement: string): boolean {
  return sessionEnded(error) && (CHANGES_NOTHING.test(statement) || fieldsOf(error).code === NEVER_RAN_CODE);
}

/** Runs `work`, translating what it throws. */
export async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translateError(error);
  }
}
