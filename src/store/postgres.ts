import type pg from "pg";
import type { Logger } from "pino";
import { errorFields, StoreUnavailable } from "../domain/errors.ts";
import type { Database, Queryable, Row } from "./database.ts";
import { mayRetry, translated, translateError } from "./errors.ts";
import { listenWithReconnect } from "./pg-listen.ts";
import { PrimaryPool, type Primary } from "./pg-primary.ts";
import { logged } from "./sql-log.ts";
import { typeParsers } from "./timestamp.ts";

export interface PostgresOptions {
  /** One host, or several (docs/high-availability.md): then the primary among them is used. */
  connectionString: string;
  max?: number;
  log: Logger;
  /**
   * The longest any wait for the database may take: for a pool connection, and for a statement
   * (KEYPLANE_DATABASE_TIMEOUT_MS). A connection whose statement timed out is discarded, not reused.
   */
  timeoutMs?: number;
  /**
   * How often the listening connection is checked, and how soon a lost one is tried again; also how
   * soon, after no host answered as the primary, the hosts are asked again.
   */
  listenCheckMs?: number;
  /**
   * The sessions' application_name (pg_stat_activity): `name` for the pool, `name-listen` for the
   * listening connection, so an operator can tell the API's sessions from the webhook sender's.
   */
  name?: string;
  /**
   * Plans the pool's statements at each execution, never from a cached generic plan: for a pool whose
   * tables swing in size faster than statistics follow (the webhook outbox, docs/adr/0016). The
   * listening connection's catch-up always is (see CUSTOM_PLANS).
   */
  planEachTime?: boolean;
}

/**
 * A prepared statement's generic plan is made once, with the statistics of that moment, and kept until
 * they change: a plan made while a table was nearly empty (a new database) reads all of it once it holds
 * many rows, until an ANALYZE, which autovacuum makes at most once a minute and never while it is off.
 * A custom plan, made at each execution, estimates from the table's size at that moment. The outbox and
 * the key-change log grow from empty to hundreds of thousands of rows within minutes (the benchmark's
 * claims took 30 ms each, a hash join over the whole outbox, where an index gives them in 0.4 ms).
 */
const CUSTOM_PLANS = "-c plan_cache_mode=force_custom_plan";
/** Times come back in UTC, in the form typeParsers reads fastest. */
const UTC = "-c TimeZone=UTC";

export function openPostgres({ connectionString, max = 10, log, timeoutMs = 5_000, listenCheckMs = 250, name = "keyplane", planEachTime = false }: PostgresOptions): Database {
  const primary = new PrimaryPool({
    connectionString,
    timeoutMs,
    retryMs: listenCheckMs,
    log,
    pool: {
      max,
      connectionTimeoutMillis: timeoutMs,
      // Client-side, so that it also bounds a statement whose packets stall without a reset (a
      // partition): the client gives up, and the pool discards the connection.
      query_timeout: timeoutMs,
      idleTimeoutMillis: 30_000,
      application_name: name,
      options: planEachTime ? `${UTC} ${CUSTOM_PLANS}` : UTC,
      types: typeParsers,
    },
    // pg-pool listens for errors on idle connections only: the server ending the session of one
    // checked out (a transaction between two statements) would emit 'error' with no listener, which
    // ends the process. With this one, its next statement fails instead, and the connection is discarded.
    onConnect: (client) => {
      let reported = false;
      client.on("error", (error) => {
        if (!reported) log.warn({ err: errorFields(error) }, "database connection lost");
        reported = true;
      });
    },
  });
  /** The primary's pool, and a failure there reported, so that the primary is looked for again. */
  const onPrimary = async <T>(work: (p: Primary) => Promise<T>): Promise<T> => {
    const p = await primary.primary();
    try {
      return await work(p);
    } catch (error) {
      primary.failed(p, error);
      throw error;
    }
  };

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
        onPrimary(({ pool }) =>
          send<R>(pool, text, params).catch((error: unknown) => {
            if (!mayRetry(error, text)) throw error;
            log.info({ err: errorFields(error) }, "database connection lost under a statement: sent again");
            return send<R>(pool, text, params);
          }),
        ),
      ),
    exec: (script) =>
      translated(() =>
        onPrimary(async ({ pool }) => {
          await pool.query(script);
        }),
      ),
  };

  return {
    kind: "postgres",
    query: (text, params) => inTime(() => pooled.query(text, params)),
    exec: (script) => inTime(() => pooled.exec(script)),
    transaction: (work) => {
      let late = false;
      return inTime(() => translated(() => onPrimary(({ pool }) => inTransaction(pool, on, work, () => late))), () => (late = true));
    },
    listen: (channels, onReset, catchUp, purpose) =>
      listenWithReconnect({
        primary, channels, onReset, catchUp, log, timeoutMs, checkMs: listenCheckMs, name: purpose ? `${name}-${purpose}-listen` : `${name}-listen`, options: `${UTC} ${CUSTOM_PLANS}`,
      }),
    async close() {
      await primary.close();
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
