import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import type { Logger } from "pino";
import type { Database } from "../../src/store/database.ts";
import { openPglite } from "../../src/store/pglite.ts";
import { openPostgres } from "../../src/store/postgres.ts";

// The database suites run unchanged on each backend that is here: PGlite always, PostgreSQL when the
// global setup found a server. Each opened database is new and empty.
export type Backend = "pglite" | "postgres";

export function backends(): Backend[] {
  return inject("postgresUrl") ? ["pglite", "postgres"] : ["pglite"];
}

export interface TestDatabase {
  db: Database;
  /** A connection string for another process to share it (PostgreSQL only). */
  url: string | undefined;
  drop(): Promise<void>;
}

/** Creates an empty database on the server and returns its connection string. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = inject("postgresUrl");
  if (!server) throw new Error("no PostgreSQL server for this test");
  const name = `keyplane_test_${randomBytes(6).toString("hex")}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function openTestDatabase(backend: Backend, log: Logger): Promise<TestDatabase> {
  if (backend === "pglite") {
    const db = await openPglite(undefined, log);
    return { db, url: undefined, drop: () => db.close() };
  }
  const created = await createPostgresDatabase();
  const db = openPostgres({ connectionString: created.url, log });
  return {
    db,
    url: created.url,
    async drop() {
      await db.close();
      await created.drop();
    },
  };
}
