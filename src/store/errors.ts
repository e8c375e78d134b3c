import { StoreUnavailable, UniqueViolation } from "../domain/errors.ts";

// The one place that reads the drivers' errors (node-postgres and PGlite): a refused unique index, or
// a database that cannot be reached, become the typed errors of domain/errors.ts; anything else (a
// defect, a check constraint) goes on as it is.
const UNIQUE_VIOLATION = "23505";
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EHOSTUNREACH", "EPIPE", "57P01", "57P02", "57P03", "53300"]);
const UNREACHABLE_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|PGlite is closed|pool after calling end|Query read timeout/i;

export function translateError(error: unknown): unknown {
  if (error instanceof StoreUnavailable || error instanceof UniqueViolation) return error;
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : "";
  if (code === UNIQUE_VIOLATION) return new UniqueViolation();
  const message = typeof e?.message === "string" ? e.message : "";
  if (UNREACHABLE_CODES.has(code) || code.startsWith("08")) return new StoreUnavailable(code);
  if (UNREACHABLE_MESSAGES.test(message)) return new StoreUnavailable(message.slice(0, 80));
  return error;
}

/** Runs `work`, translating what it throws. */
export async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translateError(error);
  }
}
