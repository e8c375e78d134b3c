import pg from "pg";
import type { Logger } from "pino";
import { errorFields, StoreUnavailable } from "../domain/errors.ts";
import type { ChannelHandlers, Database, ListenState, Queryable, Row } from "./database.ts";
import { mayRetry, translated, translateError } from "./errors.ts";
import { logged } from "./sql-log.ts";
import { typeParsers } from "./timestamp.ts";

export interface PostgresOptions {
  connectionString: string;
  max?: number;
  log: Logger;
  /**
   * The longest any wait for the database may take: for a pool connection, and for a statement
   * (KEYPLANE_DATABASE_TIMEOUT_MS). A connection whose statement timed out is discarded, not reused.
   */
  timeoutMs?: number;
  /** How often the listening connection is checked, and how soon a lost one is tried again. */
  listenCheckMs?: number;
}

export function openPostgres({ connectionString, max = 10, log, timeoutMs = 5_000, listenCheckMs = 250 }: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: timeoutMs,
    // Client-side, so that it also bounds a statement whose packets stall without a reset (a
    // partition): the client gives up, and the pool discards the connection.
    query_timeout: timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: "keyplane",
    // Times come back in UTC, in the form typeParsers reads fastest.
    options: "-c TimeZone=UTC",
    types: typeParsers,
  });
  // pg-pool listens for errors on idle connections only: the server ending the session of one checked
  // out (a transaction between two statements) would emit 'error' with no listener, which ends the
  // process. With this one, its next statement fails instead, and the connection is discarded.
  pool.on("connect", (client) => {
    let reported = false;
    client.on("error", (error) => {
      if (!reported) log.warn({ err: errorFields(error) }, "database connection lost");
      reported = true;
    });
  });
  // The pool's own report of an idle connection lost (it replaces it): logged by the listener above.
  pool.on("error", () => undefined);

  // The caller's answer waits no longer than `timeoutMs` in all, connection included: past it, it is
  // told the store is unavailable, while the statement runs on until its own time-out releases the
  // connection as broken. (A write so cut off may or may not take effect: docs/api.md says so.)
  //
  // Once the database has not answered, one call at a time tries it again; the others are told at once
  // that it is unavailable, so that a request making several calls waits for one time-out, not several.
  let unreachable = false;
  let probing = false;
  const inTime = <T>(call: () => Promise<T>, onLate?: () => void): Promise<T> => {
    if (unreachable && probing) return Promise.reject(new StoreUnavailable("unreachable"));
    const probe = unreachable;
    if (probe) probing = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        onLate?.();
        reject(new StoreUnavailable("timeout"));
      }, timeoutMs);
    });
    const work = call();
    work.catch(() => undefined);
    return Promise.race([work, late]).then(
      (value) => {
        unreachable = false;
        return value;
      },
      (error: unknown) => {
        if (error instanceof StoreUnavailable) unreachable = true;
        throw error;
      },
    ).finally(() => {
      clearTimeout(timer);
      if (probe) probing = false;
    });
  };

  // Every statement is prepared under a name, once per connection: PostgreSQL then plans it once, not
  // on every call. Planning a key's query (six tables joined) cost more than running it: about 0.5 ms
  // of the database's CPU per provisioned key (pg_stat_statements over the provisioning benchmark).
  // The SQL texts are a fixed set (values travel as parameters), so the names are too.
  const names = new Map<string, string>();
  const named = (text: string) => {
    let name = names.get(text);
    if (name === undefined) names.set(text, (name = `keyplane_${names.size + 1}`));
    return name;
  };
  const send = async <R extends Row>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly unknown[]) =>
    (await client.query<R>({ name: named(text), text, values: params as unknown[] | undefined })).rows;
  const on = (client: pg.PoolClient): Queryable => ({
    query: <R extends Row>(text: string, params?: readonly unknown[]) => logged(log, text, () => send<R>(client, text, params)),
    exec: (script) =>
      translated(async () => {
        await client.query(script);
      }),
  });
  // A statement that met its connection gone is sent once more, on another, when that cannot do twice
  // what it should do once (errors.ts, mayRetry): a connection the server ended while it sat idle in the
  // pool is found so by the first statement sent on it, and that request need not fail for it.
  const pooled: Queryable = {
    query: <R extends Row>(text: string, params?: readonly unknown[]) =>
      logged(log, text, () =>
        send<R>(pool, text, params).catch((error: unknown) => {
          if (!mayRetry(error, text)) throw error;
          log.info({ err: errorFields(error) }, "database connection lost under a statement: sent again");
          return send<R>(pool, text, params);
        }),
      ),
    exec: (script) =>
      translated(async () => {
        await pool.query(script);
      }),
  };

  return {
    kind: "postgres",
    query: (text, params) => inTime(() => pooled.query(text, params)),
    exec: (script) => inTime(() => pooled.exec(script)),
    transaction: (work) => {
      let late = false;
      return inTime(() => translated(() => inTransaction(pool, on, work, () => late)), () => (late = true));
    },
    listen: (channels, onReset) => listenWithReconnect({ connectionString, channels, onReset, log, timeoutMs, checkMs: listenCheckMs }),
    async close() {
      await pool.end();
    },
  };
}

/**
 * `work` on one pooled connection between BEGIN and COMMIT. Once `late()` (its caller was told the
 * store is unavailable) it starts no statement, COMMIT included: it fails, and the connection is
 * discarded, which aborts the transaction on the server. A connection that timed out or was cut
 * cannot roll back either: it goes too. Any other failure rolls back and keeps the connection.
 */
async function inTransaction<T>(pool: pg.Pool, on: (client: pg.PoolClient) => Queryable, work: (tx: Queryable) => Promise<T>, late: () => boolean): Promise<T> {
  const client = await begun(pool, late);
  const q = on(client);
  const tooLate = () => Promise.reject(new StoreUnavailable("timeout"));
  const tx: Queryable = {
    query: (text, params) => (late() ? tooLate() : q.query(text, params)),
    exec: (script) => (late() ? tooLate() : q.exec(script)),
  };
  let broken: Error | undefined;
  try {
    const result = await work(tx);
    await tx.exec("COMMIT");
    return result;
  } catch (error) {
    if (late() || translateError(error) instanceof StoreUnavailable) broken = error instanceof Error ? error : new Error(String(error));
    else await client.query("ROLLBACK").catch((rollback: unknown) => (broken = rollback instanceof Error ? rollback : new Error(String(rollback))));
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * A pooled connection on which BEGIN went through. When BEGIN finds the connection gone, nothing else
 * was sent on it: BEGIN goes again, once, on another.
 */
async function begun(pool: pg.Pool, late: () => boolean, again = true): Promise<pg.PoolClient> {
  const client = await pool.connect();
  try {
    if (late()) throw new StoreUnavailable("timeout");
    await client.query("BEGIN");
    return client;
  } catch (error) {
    // BEGIN fails only with its connection (gone, timed out) or its caller's time: it is discarded.
    client.release(error instanceof Error ? error : new Error(String(error)));
    if (again && mayRetry(error, "BEGIN")) return begun(pool, late, false);
    throw error;
  }
}

interface ListenOptions {
  connectionString: string;
  channels: ChannelHandlers;
  onReset?: (state: ListenState) => void;
  log: Logger;
  timeoutMs: number;
  checkMs: number;
}

/**
 * LISTEN to every channel on one dedicated connection, checked every `checkMs` with a statement
 * bounded by `timeoutMs`: a connection that errors, or stops answering without closing (a partition),
 * is lost. Reported at once, then tried again every `checkMs` until the database answers: as soon as
 * it is back, listening is too (notifications sent meanwhile are gone for good, which the "restored"
 * report says).
 */
async function listenWithReconnect(options: ListenOptions): Promise<() => Promise<void>> {
  const { connectionString, channels, onReset, log, timeoutMs, checkMs } = options;
  const names = Object.keys(channels);
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<pg.Client> => {
    const next = new pg.Client({ connectionString, application_name: "keyplane-listen", connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
    next.on("notification", (message) => {
      if (Object.hasOwn(channels, message.channel)) channels[message.channel]!(message.payload ?? "");
    });
    next.on("error", (error) => {
      if (client === next) lose(error);
    });
    try {
      await next.connect();
      for (const channel of names) await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return next;
    } catch (error) {
      next.end().catch(() => undefined);
      throw error;
    }
  };

  const lose = (error: unknown): void => {
    const lost = client;
    client = undefined;
    lost?.end().catch(() => undefined);
    if (stopped) return;
    log.warn({ err: errorFields(error), channels: names }, "notification connection lost");
    onReset?.("lost");
  };

  // One loop: while listening, check the connection; while not, try to listen again.
  const tick = async (): Promise<void> => {
    if (stopped) return;
    if (client) {
      const checked = client;
      // Lost already if its 'error' came first: then it is not lost twice.
      await checked.query("SELECT 1").catch((error: unknown) => {
        if (client === checked) lose(error);
      });
    } else {
      try {
        const next = await connect();
        if (stopped) return void next.end().catch(() => undefined);
        client = next;
        log.info({ channels: names }, "notification connection restored");
        onReset?.("restored");
      } catch {
        // Still unreachable: the next tick tries again.
      }
    }
    if (!stopped) timer = setTimeout(() => void tick(), checkMs);
  };

  client = await connect();
  timer = setTimeout(() => void tick(), checkMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await client?.end().catch(() => undefined);
  };
}
