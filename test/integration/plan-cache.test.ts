// Which of keyplane's PostgreSQL sessions plan their prepared statements at each execution (src/store/
// postgres.ts, CUSTOM_PLANS): the webhook sender's pool and every listening connection, whose tables
// (the outbox, the key-change log) grow from empty faster than statistics follow; the API's pool keeps
// PostgreSQL's choice, a generic plan once it pays. Counted by PostgreSQL itself, in
// pg_prepared_statements of the session that ran the statement.
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Queryable } from "../../src/store/database.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { backends, createPostgresDatabase } from "../support/databases.ts";

const hasPostgres = backends().includes("postgres");
const PROBE = "SELECT count(*) AS n FROM pg_class WHERE oid = $1";
const RUNS = 8;

/** Runs the probe RUNS times on one session, then reads how PostgreSQL planned it there. */
async function plansOf(q: Queryable): Promise<{ generic: number; custom: number }> {
  for (let i = 0; i < RUNS; i++) await q.query(PROBE, [i]);
  const [row] = await q.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", [PROBE]);
  return { generic: Number(row!.generic_plans), custom: Number(row!.custom_plans) };
}

describe.skipIf(!hasPostgres)("prepared statements' plans on PostgreSQL", () => {
  let database: { url: string; drop(): Promise<void> };
  const log = pino({ level: "silent" });
  beforeAll(async () => {
    database = await createPostgresDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("plans every execution on a pool opened with planEachTime, and lets PostgreSQL keep a generic plan on others", async () => {
    const each = openPostgres({ connectionString: database.url, log, max: 1, planEachTime: true });
    const usual = openPostgres({ connectionString: database.url, log, max: 1 });
    try {
      expect(await plansOf(each)).toEqual({ generic: 0, custom: RUNS });
      expect((await plansOf(usual)).generic).toBeGreaterThan(0);
    } finally {
      await each.close();
      await usual.close();
    }
  });

  it("plans every execution on the listening connection, whose catch-up reads a growing log", async () => {
    const db = openPostgres({ connectionString: database.url, log, max: 1 });
    try {
      let plans: { generic: number; custom: number } | undefined;
      const stop = await db.listen({ keyplane_plan_test: () => undefined }, undefined, {
        read: async (q) => void (plans ??= await plansOf(q)),
        lost: () => undefined,
        wanted: () => false,
      });
      await stop();
      expect(plans).toEqual({ generic: 0, custom: RUNS });
    } finally {
      await db.close();
    }
  });
});
