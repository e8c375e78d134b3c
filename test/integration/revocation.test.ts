import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { createTenant, useServed, type Tenant } from "../support/world.ts";

// Revocation through the verification cache: a key disabled or deleted (itself, or by deleting
// anything above it) fails on the same process for every request that starts after the change
// returned, and on another process within a second.
interface Sample {
  startedAt: number;
  status: number;
}

/** Calls GET /keys/self with `token` from `connections` loops until stopped; records each answer. */
function hammer(url: string, token: string, connections = 8) {
  const samples: Sample[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  let running = true;
  const loops = Array.from({ length: connections }, async () => {
    while (running) {
      const startedAt = performance.now();
      const res = await fetch(`${url}/keys/self`, { headers: { Authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      samples.push({ startedAt, status: res.status });
      for (const w of waiting.filter((w) => samples.length >= w.count)) w.resolve();
    }
  });
  return {
    samples,
    /** Resolves once `n` more answers have come in. */
    answered(n: number): Promise<void> {
      const count = samples.length + n;
      return new Promise((resolve) => waiting.push({ count, resolve }));
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      return samples;
    },
  };
}


describe.each(backends())("revocation on one process (%s)", (backend) => {
  const served = useServed(backend);
  let svc: TestService;
  let url: string;
  let acme: Tenant;
  beforeAll(() => ({ svc, url, acme } = served()));

  const root = () => svc.as(acme.keys.customer);

  /** Runs `change` under load on `token`; every request that started after it returned must get `expected`. */
  async function underLoad(token: string, change: () => Promise<unknown>, expected: number) {
    const load = hammer(url, token);
    await load.answered(50);
    await change();
    const changedAt = performance.now();
    await load.answered(50);
    const samples = await load.stop();
    const after = samples.filter((s) => s.startedAt > changedAt);
    expect(samples.filter((s) => s.startedAt <= changedAt).length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((s) => s.status !== expected)).toEqual([]);
  }

  it("disable, re-enable and delete take effect for every later request", async () => {
    const key = (await root().post(`/customers/acme/domains/${acme.domains[0]}/keys`, { name: "hot" })).body;
    await underLoad(key.keyId, () => root().put(`/keys/${key.id}`, { active: false }), 401);
    await underLoad(key.keyId, () => root().put(`/keys/${key.id}`, { active: true }), 200);
    await underLoad(key.keyId, () => root().delete(`/keys/${key.id}`), 401);
  });

  it("deleting the domain above a key stops it for every later request", async () => {
    const key = (await root().post(`/customers/acme/domains/${acme.domains[1]}/keys`, { name: "below" })).body;
    await underLoad(key.keyId, () => svc.admin.delete(`/admin/customers/acme/domains/${acme.domains[1]}`), 401);
  });

  it("deleting the customer stops all of its keys", async () => {
    await underLoad(acme.keys.application, () => svc.admin.delete("/admin/customers/acme"), 401);
    for (const token of Object.values(acme.keys)) expect((await svc.as(token).get("/keys/self")).status).toBe(401);
  });
});

describe.runIf(backends().includes("postgres"))("revocation across processes on one PostgreSQL database", () => {
  let a: TestService;
  let b: TestService;
  let bHttp: Listening;
  let dropDatabase: () => Promise<void>;
  let url: string;
  let acme: Tenant;
  const bDatabaseLogs: string[] = [];

  beforeAll(async () => {
    const created = await createPostgresDatabase();
    url = created.url;
    dropDatabase = created.drop;
    a = await startService("postgres", { database: { db: openPostgres({ connectionString: url, log: captureLogger([]) }), url, drop: async () => {} } });
    // The other process: its own pool, its own listening connection, its own cache; the same keys.
    b = await startService("postgres", {
      masterKey: a.masterKey,
      database: { db: openPostgres({ connectionString: url, log: captureLogger(bDatabaseLogs) }), url, drop: async () => {} },
    });
    bHttp = await listen(b.app, 0, "127.0.0.1");
    acme = await createTenant(a, "acme");
  });
  afterAll(async () => {
    await bHttp.close(100);
    await a.stop();
    await b.stop();
    await a.database.db.close();
    await b.database.db.close();
    await dropDatabase();
  });

  /** Time until B answers `status` for `token` after `change` returned on A; B never flips back. */
  async function convergence(token: string, change: () => Promise<unknown>, status: number): Promise<number> {
    expect((await b.as(token).get("/keys/self")).status).toBe(status === 401 ? 200 : 401); // B has it cached
    await change();
    const changedAt = performance.now();
    for (;;) {
      const res = await fetch(`${bHttp.url}/keys/self`, { headers: { Authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      if (res.status === status) break;
      expect(performance.now() - changedAt).toBeLessThan(1_000);
    }
    const delay = performance.now() - changedAt;
    for (let i = 0; i < 20; i++) expect((await b.as(token).get("/keys/self")).status).toBe(status);
    return delay;
  }

  it("a key disabled, enabled or deleted on one process follows on the other within a second", async () => {
    const key = (await a.as(acme.keys.customer).post("/customers/acme/keys", { name: "shared" })).body;
    await convergence(key.keyId, () => a.as(acme.keys.customer).put(`/keys/${key.id}`, { active: false }), 401);
    await convergence(key.keyId, () => a.as(acme.keys.customer).put(`/keys/${key.id}`, { active: true }), 200);
    await convergence(key.keyId, () => a.as(acme.keys.customer).delete(`/keys/${key.id}`), 401);
    await convergence(acme.keys.domain, () => a.admin.delete(`/admin/customers/acme/domains/${acme.domains[0]}`), 401);
  });

  it("after losing its notification connection, a process drops its cache and serves nothing stale", { timeout: 30_000 }, async () => {
    const key = (await a.as(acme.keys.customer).post("/customers/acme/keys", { name: "dropped" })).body;
    expect((await b.as(key.keyId).get("/keys/self")).status).toBe(200);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const listeners = async () =>
        (await admin.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'keyplane-listen'")).rows;
      // Kill the listening connections; while they are down, disable the key: that notification is lost.
      const before = await listeners();
      expect(before.length).toBe(2);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'keyplane-listen'");
      // B notices the loss, then caches the key again before it is disabled: only the cache drop on
      // reconnection can save B from a stale answer now.
      await expect.poll(() => bDatabaseLogs.join("").includes("notification connection lost")).toBe(true);
      expect((await b.as(key.keyId).get("/keys/self")).status).toBe(200);
      await a.as(acme.keys.customer).put(`/keys/${key.id}`, { active: false });
      const replaced = async () => {
        const now = (await listeners()).map((r) => r.pid);
        return now.length === 2 && now.every((pid) => !before.some((r) => r.pid === pid));
      };
      await expect.poll(replaced, { timeout: 10_000, interval: 100 }).toBe(true);
      await expect.poll(() => bDatabaseLogs.join("").includes("notification connection restored")).toBe(true);
      for (let i = 0; i < 20; i++) expect((await b.as(key.keyId).get("/keys/self")).status).toBe(401);
      // And notifications flow again.
      await convergence(key.keyId, () => a.as(acme.keys.customer).put(`/keys/${key.id}`, { active: true }), 200);
    } finally {
      await admin.end();
    }
  });
});

describe("entries expire even when no notification comes", () => {
  it("a change made behind the service's back shows within the TTL", async () => {
    let now = 1_000;
    const svc = await startService("pglite", { keyCache: { ttlMs: 200, now: () => now } });
    try {
      const acme = await createTenant(svc, "acme");
      const token = acme.keys.domain;
      expect((await svc.as(token).get("/keys/self")).status).toBe(200);
      await svc.database.db.exec("ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed");
      await svc.database.db.query("UPDATE api_keys SET active = false WHERE name = 'k' AND domain_id IS NOT NULL AND application_id IS NULL AND subscriber_id IS NULL");
      expect((await svc.as(token).get("/keys/self")).status).toBe(200); // still cached: no notification came
      now += 201;
      expect((await svc.as(token).get("/keys/self")).status).toBe(401);
    } finally {
      await svc.stop();
    }
  });
});
