import type { Logger } from "pino";
import { translateError } from "./errors.ts";

// node-postgres's advice: one module runs every statement, logging its text and duration, never its
// parameters; what it throws leaves as the store's typed errors (errors.ts).
export async function logged<T>(log: Logger, text: string, run: () => Promise<T>): Promise<T> {
  const startedAt = performance.now();
  try {
    const result = await run();
    logQuery(log, text, startedAt);
    return result;
  } catch (error) {
    logQuery(log, text, startedAt, error);
    const translated = translateError(error);
    // A failure the store has no type for goes on as it is, naming its statement for the log line
    // that reports it (domain/errors.ts, errorFields).
    if (translated === error && error instanceof Error) Object.assign(error, { statement: statementOf(text) });
    throw translated;
  }
}

/** A statement as the log shows it: its SQL text on one line, shortened. */
function statementOf(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 200);
}

function logQuery(log: Logger, text: string, startedAt: number, error?: unknown): void {
  if (!log.isLevelEnabled("debug")) return;
  const ms = Number((performance.now() - startedAt).toFixed(2));
  const sql = statementOf(text);
  if (error) log.debug({ sql, ms, code: (error as { code?: unknown }).code, message: (error as Error).message }, "query failed");
  else log.debug({ sql, ms }, "query");
}
