import { randomBytes } from "node:crypto";
import pg from "pg";
import { sleep } from "./processes.ts";

// The benchmark's own database on the server DATABASE_URL names: created fresh, dropped at the end.
// Queries are counted from PostgreSQL's side, in pg_stat_database, read over a connection to the
// server's maintenance database so that reading them is not counted.

export interface BenchDatabase {
  name: string;
  /** The connection string keyplane gets. */
  url: string;
  serverVersion: string;
  /** Transactions the server has counted for the bench database (commits + rollbacks). */
  transactions(): Promise<number>;
  /** Waits until every backend has flushed its counts (see settle()). */
  settledTransactions(): Promise<number>;
  /** The number a `SELECT count(*) ...` gives in the bench database. */
  count(sql: string): Promise<number>;
  drop(): Promise<void>;
}

export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/**
 * How long an idle backend may keep its statistics before flushing them: PostgreSQL 15+ flushes a
 * busy backend's counts at most once a second, and an idle one's after PGSTAT_IDLE_INTERVAL (10 s).
 * pg_stat_force_next_flush() only affects the backend that calls it, not keyplane's connections.
 */
const STATS_IDLE_FLUSH_MS = 10_000;

export async function createBenchDatabase(serverUrl: string): Promise<BenchDatabase> {
  const admin = new pg.Client({ connectionString: serverUrl, application_name: "keyplane-bench" });
  await admin.connect();
  const name = `keyplane_bench_${randomBytes(4).toString("hex")}`;
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } catch (error) {
    await admin.end();
    throw error;
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const { rows } = await admin.query<{ server_version: string }>("SHOW server_version");

  const transactions = async () => {
    const result = await admin.query<{ n: string }>(
      "SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1",
      [name],
    );
    return Number(result.rows[0]?.n ?? NaN);
  };

  return {
    name,
    url: url.toString(),
    serverVersion: rows[0]?.server_version ?? "unknown",
    transactions,
    async settledTransactions() {
      await sleep(STATS_IDLE_FLUSH_MS + 1_000);
      // and then until two readings half a second apart agree
      let last = await transactions();
      for (let i = 0; i < 20; i++) {
        await sleep(500);
        const now = await transactions();
        if (now === last) return now;
        last = now;
      }
      return last;
    },
    async count(sql) {
      const client = new pg.Client({ connectionString: url.toString(), application_name: "keyplane-bench" });
      await client.connect();
      try {
        const result = await client.query<{ count: string }>(sql);
        return Number(result.rows[0]?.count);
      } finally {
        await client.end();
      }
    },
    async drop() {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`).catch(async (error: unknown) => {
          // before PostgreSQL 13 there is no FORCE: keyplane's processes have stopped by now anyway
          if ((error as { code?: string }).code !== "42601") throw error;
          await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)}`);
        });
      } finally {
        await admin.end();
      }
    },
  };
}

/** A measured run and what PostgreSQL counted over it (bench/README.md, "Counting database queries"). */
export interface CountedRun<T> {
  result: T;
  /** The reading before the run. */
  from: number;
  /** Transactions counted from the reading before the run to the one after it. */
  transactions: number;
  windowSeconds: number;
  /** Transactions counted over an interval right after, with nothing running. */
  idle: number;
  idleWindowSeconds: number;
  /** The idle rate over the window: keyplane's own background work, not the run's. */
  background: number;
  /** What the run itself made the database do. */
  queries: number;
}

/**
 * Runs `run` between two readings of the transactions count, then reads it over an idle interval and
 * takes that rate off: keyplane's background work (the expiry sweep, the last-use batch) and
 * PostgreSQL's own go on whether or not anything is measured. `settle`: each reading waits for every
 * backend's counts (the full run); otherwise read at once, over a 2 s idle interval (the short run,
 * for CI's time).
 */
export async function countTransactions<T>(db: BenchDatabase, settle: boolean, run: () => Promise<T>): Promise<CountedRun<T>> {
  const reading = () => (settle ? db.settledTransactions() : db.transactions());
  const start = await reading();
  const startedAt = performance.now();
  const result = await run();
  const end = await reading();
  const windowSeconds = (performance.now() - startedAt) / 1000;
  const idleFrom = performance.now();
  const idleEnd = settle ? await db.settledTransactions() : await sleep(2_000).then(() => db.transactions());
  const idleWindowSeconds = (performance.now() - idleFrom) / 1000;
  const background = ((idleEnd - end) / idleWindowSeconds) * windowSeconds;
  const transactions = end - start;
  return { result, from: start, transactions, windowSeconds, idle: idleEnd - end, idleWindowSeconds, background, queries: Math.max(0, transactions - background) };
}

/** The count behind a CountedRun's queries, for the JSON report. */
export function countFigures(counted: CountedRun<unknown>) {
  const { transactions, windowSeconds, idle, idleWindowSeconds, background } = counted;
  return { measured: transactions, windowSeconds: tenths(windowSeconds), idle, idleWindowSeconds: tenths(idleWindowSeconds), backgroundSubtracted: tenths(background) };
}

/** The count behind a CountedRun's queries, for a figure's details. */
export function countDetail(counted: CountedRun<unknown>): string {
  return `${counted.transactions} transactions over ${tenths(counted.windowSeconds)} s, less ${tenths(counted.background)} of background: ${counted.idle} over ${tenths(counted.idleWindowSeconds)} s idle`;
}

const tenths = (n: number) => Number(n.toFixed(1));
