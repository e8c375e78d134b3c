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
    throw translateError(error);
  }
}

function logQuery(log: Logger, text: string, startedAt: number, error?: unknown): void {
  if (!log.isLevelEnabled("debug")) return;
  const ms = Number((performance.now() - startedAt).toFixed(2));
  const sql = text.replace(/\s+/g, " ").trim().slice(0, 200);
  if (error) log.debug({ sql, ms, code: (error as { code?: unknown }).code, message: (error as Error).message }, "query failed");
  else log.debug({ sql, ms }, "query");
}
