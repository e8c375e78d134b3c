// Usage analytics across real `keyplane serve` processes on one PostgreSQL database (docs/analytics.md,
// "Writing"): counts from every process add up exactly; a process stopped with SIGTERM writes what it
// counted before it exits; one killed with SIGKILL loses at most its last 10 seconds.
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import { startServerProcess, type ServerProcess } from "../support/process.ts";

const hasPostgres = backends().includes("postgres");
const skipReason = hasPostgres ? "" : " (skipped: no PostgreSQL server; set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432)";

describe.skipIf(!hasPostgres)(`usage analytics across keyplane processes${skipReason}`, () => {
  let database: { url: string; drop(): Promise<void> };
  let sql: pg.Client;
  const processes: ServerProcess[] = [];
  const dataDirs: string[] = [];
  const adminToken = "kpa_analytics_" + randomBytes(24).toString("hex");
  const masterKey = randomBytes(32).toString("hex");
  let keys = 0;

  const start = async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "keyplane-analytics-"));
    dataDirs.push(dataDir);
    const p = await startServerProcess({ DATABASE_URL: database.url, KEYPLANE_MASTER_KEY: masterKey, KEYPLANE_ADMIN_TOKEN: adminToken, KEYPLANE_DATA_DIR: dataDir });
    processes.push(p);
    return p;
  };
  const newKey = async (p: ServerProcess) => {
    const res = await fetch(`${p.url}/admin/customers/acme/keys`, {
      method: "POST", headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ name: `k${keys++}` }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: number; keyId: string };
  };
  /** `count` verdicts of a valid key on `p`, 20 at a time. */
  const verify = async (p: ServerProcess, key: string, count: number) => {
    for (let done = 0; done < count; done += 20) {
      await Promise.all(Array.from({ length: Math.min(20, count - done) }, async () => {
        const res = await fetch(`${p.url}/verify`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ key }) });
        expect(((await res.json()) as { code: string }).code).toBe("VALID");
      }));
    }
  };
  const written = async (lineage: number) => {
    const { rows } = await sql.query<{ valid: string | null }>("SELECT sum(valid) AS valid FROM usage_minutes WHERE lineage = $1", [lineage]);
    return Number(rows[0]!.valid ?? 0);
  };

  beforeAll(async () => {
    database = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    const first = await start();
    const res = await fetch(`${first.url}/admin/customers`, {
      method: "POST", headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ name: "acme" }),
    });
    expect(res.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await sql?.end();
    await database?.drop();
    await Promise.all(dataDirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("adds up the counts of two processes exactly, each written at its SIGTERM", { timeout: 60_000 }, async () => {
    const a = processes[0]!;
    const b = await start();
    const key = await newKey(a);
    await Promise.all([verify(a, key.keyId, 437), verify(b, key.keyId, 291)]);
    expect(await a.stop()).toBe(0);
    expect(await b.stop()).toBe(0);
    expect(await written(key.id)).toBe(437 + 291);
  });

  it("loses at most the last 10 seconds of a process killed with SIGKILL", { timeout: 60_000 }, async () => {
    const p = await start();
    const key = await newKey(p);
    await verify(p, key.keyId, 150);
    // Its next write, at most 10 s away, takes all of them.
    const until = Date.now() + 12_000;
    while ((await written(key.id)) < 150) {
      expect(Date.now()).toBeLessThan(until);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await verify(p, key.keyId, 40);
    p.child.kill("SIGKILL");
    await once(p.child, "exit");
    const kept = await written(key.id);
    expect(kept).toBeGreaterThanOrEqual(150);
    expect(kept).toBeLessThanOrEqual(190);
  });
});
