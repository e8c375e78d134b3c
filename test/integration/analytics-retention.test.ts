// Usage analytics' retention (docs/analytics.md, "Retention"): minutes, hours and days each kept for
// their time and then removed whole, partition by partition, never row by row; a removal waiting for a
// reader never makes a write or an /auth wait. With a fake clock, on each backend; the locks on PostgreSQL.
import pg from "pg";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";

type Key = { id: number; keyId: string };
type Answer = { buckets: { start: string; valid: number }[] };

const DAY = 86_400_000;

describe.each(backends())("usage analytics' retention on %s", (backend) => {
  const time = fakeClock("2026-11-23T10:10:00.000Z");
  let svc: TestService;
  let key: Key;

  const ok = async <T>(request: PromiseLike<{ status: number; body: unknown }>, status = 200): Promise<T> => {
    const res = await request;
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    return res.body as T;
  };
  const auth = () => supertest(svc.app).get("/auth").set("Authorization", `Bearer ${key.keyId}`).set("X-Original-Method", "GET").set("X-Original-URI", "/customers/acme/calls");
  const partitions = async () =>
    (await svc.ctx.db.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relname LIKE 'usage\\_%\\_p%' ORDER BY 1")).map((r) => r.name);
  const valid = async (interval: string, from: string) =>
    (await ok<Answer>(svc.admin.get(`/admin/analytics?interval=${interval}&from=${from}&to=${new Date(new Date(from).getTime() + 60_000).toISOString()}`))).buckets[0]!.valid;

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000, analytics: { retention: { minute: 2 * DAY, hour: 10 * DAY, day: 400 * DAY } } });
    await ok(svc.admin.post("/admin/customers", { name: "acme" }), 201);
    key = await ok<Key>(svc.admin.post("/admin/customers/acme/keys", { name: "root" }));
  });
  afterAll(() => svc?.stop());

  it("makes the partitions of now and the next day ahead", async () => {
    expect(await partitions()).toEqual(["usage_days_p2026", "usage_hours_p202611", "usage_minutes_p20261123", "usage_minutes_p20261124"]);
  });

  it("keeps each grain for its time, then drops its partitions whole", async () => {
    for (let i = 0; i < 3; i++) expect((await auth()).status).toBe(200);
    await svc.analytics.write();
    const deletes: string[] = [];
    const logged = svc.logs.length;

    time.set("2026-11-25T00:00:01.000Z"); // the 23rd's minutes are 37 hours old: kept
    await svc.analytics.upkeep();
    expect(await partitions()).toContain("usage_minutes_p20261123");
    time.set("2026-11-26T00:00:01.000Z"); // now all 48 hours old
    await svc.analytics.upkeep();
    expect(await partitions()).not.toContain("usage_minutes_p20261123");
    await ok(svc.admin.get("/admin/analytics?interval=minute&from=2026-11-23T10:10:00Z&to=2026-11-23T10:11:00Z"), 400);
    expect(await valid("hour", "2026-11-23T10:00:00Z")).toBe(3);

    time.set("2026-12-11T00:00:01.000Z"); // November's hours are 10 days old
    await svc.analytics.upkeep();
    expect(await partitions()).not.toContain("usage_hours_p202611");
    expect(await valid("day", "2026-11-23T00:00:00Z")).toBe(3);

    time.set("2028-02-05T00:00:01.000Z"); // 2026's days are all 400 days old
    await svc.analytics.upkeep();
    expect(await partitions()).toEqual(["usage_days_p2028", "usage_hours_p202802", "usage_minutes_p20280205", "usage_minutes_p20280206"]);
    // Removed by partition: no statement deleted a row.
    deletes.push(...svc.logs.slice(logged).filter((line) => /DELETE FROM usage_/i.test(line)));
    expect(deletes).toEqual([]);
  });

  it.skipIf(backend !== "postgres")("never makes a write or an /auth wait while a removal waits for a reader", async () => {
    time.set("2028-03-01T10:00:00.000Z");
    for (let i = 0; i < 2; i++) expect((await auth()).status).toBe(200);
    await svc.analytics.write();
    // A reader holds the minutes (an analytics read as long as one may be).
    const reader = new pg.Client({ connectionString: svc.database.url });
    await reader.connect();
    try {
      await reader.query("BEGIN");
      await reader.query("SELECT count(*) FROM usage_minutes");
      time.set("2028-03-04T00:00:01.000Z"); // the 1st's minutes are all past their 48 hours
      const removal = svc.analytics.upkeep();
      await waitForLockWait(svc.database.url!, "DETACH PARTITION");
      const startedAt = performance.now();
      expect((await auth()).status).toBe(200);
      await svc.analytics.write();
      expect(performance.now() - startedAt).toBeLessThan(1_000);
      expect(await partitions()).toContain("usage_minutes_p20280301");
      await reader.query("COMMIT");
      await removal;
      expect(await partitions()).not.toContain("usage_minutes_p20280301");
      expect(await valid("minute", "2028-03-04T00:00:00Z")).toBe(1);
    } finally {
      await reader.end();
    }
  });
});

/** Until a statement like `text` waits for a lock (the removal has reached the reader); asked outside its transaction, whose view of the activity stands still. */
async function waitForLockWait(url: string, text: string): Promise<void> {
  const q = new pg.Client({ connectionString: url });
  await q.connect();
  try {
    await untilWaiting(q, text);
  } finally {
    await q.end();
  }
}

async function untilWaiting(q: pg.Client, text: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await q.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", [`%${text}%`]);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no ${text} waited`);
}
