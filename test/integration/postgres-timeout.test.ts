import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { StoreUnavailable } from "../../src/domain/errors.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { createPostgresDatabase } from "../support/databases.ts";
import { captureLogger } from "../support/service.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

// The store's bound on every wait (KEYPLANE_DATABASE_TIMEOUT_MS, docs/api.md "When the database cannot
// be reached"), for the path the HTTP outage suite does not reach: a transaction whose connection
// stalls between BEGIN and COMMIT.
const TIMEOUT_MS = 1_000;
const server = inject("postgresUrl");

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe.skipIf(!server)("a transaction on a stalled connection (PostgreSQL; skipped without a server)", () => {
  it("fails within the time-out, never commits once its caller was told so, and the pool answers at once after", async () => {
    const created = await createPostgresDatabase();
    cleanups.push(() => created.drop());
    const target = new URL(created.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    cleanups.push(() => proxy.close());
    const db = openPostgres({ connectionString: proxy.urlFor(created.url), log: captureLogger([]), timeoutMs: TIMEOUT_MS });
    cleanups.push(() => db.close());
    const direct = new pg.Client({ connectionString: created.url });
    await direct.connect();
    cleanups.push(() => direct.end());
    await db.exec("CREATE TABLE written (x int)");

    const startedAt = performance.now();
    const outcome = db.transaction(async (tx) => {
      await tx.query("INSERT INTO written VALUES (1)");
      // So that the stalled statement's own time-out ends well after the caller's: restored in
      // between, it completes, and only the transaction's refusal to go on keeps COMMIT from running.
      await tx.query("SELECT pg_sleep(0.3)");
      proxy.stall();
      await tx.query("SELECT 1");
    });
    await expect(outcome).rejects.toBeInstanceOf(StoreUnavailable);
    expect(performance.now() - startedAt).toBeLessThan(TIMEOUT_MS + 1_000);

    proxy.restore();
    const restoredAt = performance.now();
    expect(await db.query("SELECT 1 AS one")).toEqual([{ one: 1 }]);
    expect(performance.now() - restoredAt).toBeLessThan(1_000);
    // Once no connection holds a transaction open, what it wrote is either committed or gone for good.
    const openTransactions = async () =>
      (await direct.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")).rows[0]!.n;
    await expect.poll(openTransactions, { timeout: 5_000, interval: 20 }).toBe(0);
    expect((await direct.query<{ n: number }>("SELECT count(*)::int AS n FROM written")).rows[0]!.n).toBe(0);
  });
});
