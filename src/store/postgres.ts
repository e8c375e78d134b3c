import pg from "pg";
import type { Logger } from "pino";
import { errorFields } from "../domain/errors.ts";
import type { Database, Queryable, Row } from "./database.ts";
import { translated } from "./errors.ts";
import { logged } from "./sql-log.ts";

export interface PostgresOptions {
  connectionString: string;
  max?: number;
  log: Logger;
}

export function openPostgres({ connectionString, max = 10, log }: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: "keyplane",
  });
  // An idle client's connection dropping must not crash the process; the pool replaces it.
  pool.on("error", (error) => log.warn({ err: errorFields(error) }, "idle database connection lost"));

  const on = (client: pg.Pool | pg.PoolClient): Queryable => ({
    query: <R extends Row>(text: string, params?: readonly unknown[]) =>
      logged(log, text, async () => (await client.query<R>(text, params as unknown[] | undefined)).rows),
    async exec(script) {
      await client.query(script);
    },
  });

  return {
    kind: "postgres",
    ...on(pool),
    transaction: (work) =>
      translated(async () => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          const result = await work(on(client));
          await client.query("COMMIT");
          return result;
        } catch (error) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      }),
    listen: (channel, onMessage, onReset) => listenWithReconnect({ connectionString, channel, onMessage, onReset, log }),
    async close() {
      await pool.end();
    },
  };
}

interface ListenOptions {
  connectionString: string;
  channel: string;
  onMessage: (payload: string) => void;
  onReset?: () => void;
  log: Logger;
}

/**
 * LISTEN on a dedicated connection. When it is lost, reconnect with backoff and report a reset, since
 * notifications sent while it was down are gone for good.
 */
async function listenWithReconnect(options: ListenOptions): Promise<() => Promise<void>> {
  const { connectionString, channel, onMessage, onReset, log } = options;
  let client: pg.Client | undefined;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString, application_name: "keyplane-listen" });
    next.on("notification", (message) => {
      if (message.channel === channel) onMessage(message.payload ?? "");
    });
    next.on("error", (error) => {
      log.warn({ err: errorFields(error), channel }, "notification connection lost");
      next.end().catch(() => undefined);
      if (client === next) scheduleReconnect(250);
    });
    await next.connect();
    await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    client = next;
  };

  const scheduleReconnect = (delayMs: number): void => {
    client = undefined;
    if (stopped || retryTimer) return;
    // Until the connection is back, nothing can be heard: report the reset at once, and again on reconnect.
    onReset?.();
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (stopped) return;
      connect().then(
        () => {
          log.info({ channel }, "notification connection restored");
          onReset?.();
        },
        () => scheduleReconnect(Math.min(delayMs * 2, 5_000)),
      );
    }, delayMs);
  };

  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retryTimer);
    await client?.end().catch(() => undefined);
  };
}
