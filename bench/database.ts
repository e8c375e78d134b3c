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
