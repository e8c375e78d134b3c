import pg from "pg";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, ListenState } from "../../src/store/database.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { backends, openTestDatabase, type Backend, type TestDatabase } from "../support/databases.ts";
import { captureLogger, startPeer, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// What platform paths name, for /auth and POST /verify, comes from the directory cache
// (docs/adr/0008-directory-cache.md): no database query once warm; a change to the directory, made
// through the admin API or behind the service's back, shows at once on the process that made it
// through the API and within a second on every other; nothing is kept while changes may go unheard.
const JOBS_OUT_OF_THE_WAY = { expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 };
/**
 * The key cache's own 30 s are another matter: the keys, kept since this process provisioned them
 * (services/verification/key-cache.ts, `wrote`), would be read again during a slow run.
 */
const KEYS_KEPT = { keyCache: { ttlMs: 3_600_000 } };

/** The statements run on a database opened with `captureLogger(logs)` so far: the store logs each one. */
const statements = (logs: string[]) => logs.filter((line) => (JSON.parse(line) as { msg?: string }).msg === "query").length;

/** Whether `token` may reach `path` with GET, as /auth answers it: 200, or 401 insufficient_scope. */
async function authReaches(svc: TestService, token: string, path: string): Promise<boolean> {
  const res = await supertest(svc.app).get("/auth").set("Authorization", `Bearer ${token}`).set("X-Original-Method", "GET").set("X-Original-URI", path);
  if (res.status === 200) return true;
  expect(`${res.status} ${res.headers["www-authenticate"]}`).toBe('401 Bearer realm="keyplane", error="insufficient_scope"');
  return false;
}

/** The same, as POST /verify answers it: VALID, or FORBIDDEN. */
async function verifyReaches(svc: TestService, token: string, path: string): Promise<boolean> {
  const res = await supertest(svc.app).post("/verify").send({ key: token, path });
  expect(res.status).toBe(200);
  expect(["VALID", "FORBIDDEN"]).toContain(res.body.code);
  return res.body.code === "VALID";
}

/** Both endpoints' answer, which must agree. */
async function reaches(svc: TestService, token: string, path: string): Promise<boolean> {
  const [auth, verify] = await Promise.all([authReaches(svc, token, path), verifyReaches(svc, token, path)]);
  expect(verify, `${path}: /auth and /verify disagree`).toBe(auth);
  return auth;
}

/**
 * Asks until both endpoints answer `expected` for `path`, failing once a second has passed since
 * `since`; then checks that the answer holds. Returns the time it took.
 */
async function within1s(svc: TestService, token: string, path: string, expected: boolean, since: number): Promise<number> {
  while ((await reaches(svc, token, path)) !== expected) expect(performance.now() - since, `${path} still ${!expected}`).toBeLessThan(1_000);
  const took = performance.now() - since;
  for (let i = 0; i < 5; i++) expect(await reaches(svc, token, path)).toBe(expected);
  return took;
}

describe.each(backends())("path resolution from the directory cache on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  const logs: string[] = [];
  const uuids: Record<string, string> = {};

  beforeAll(async () => {
    const database = await openTestDatabase(backend, captureLogger(logs));
    svc = await startService(backend, { database, ...JOBS_OUT_OF_THE_WAY, ...KEYS_KEPT });
    acme = await createTenant(svc, "acme");
    await createTenant(svc, "globex");
    const d1 = `/admin/customers/acme/domains/${acme.domains[0]}`;
    const uuidOf = async (path: string) => (await svc.admin.get(path)).body.uuid as string;
    Object.assign(uuids, {
      customer: await uuidOf("/admin/customers/acme"),
      domain: await uuidOf(d1),
      application: await uuidOf(`${d1}/applications/ivr`),
      subscriber: await uuidOf(`${d1}/subscribers/${acme.subscriber.msisdn}`),
    });
  });
  afterAll(async () => svc?.stop());

  it("costs no database query once warm, for longer than the old one-second answers lasted, on /auth and POST /verify, whether a path names its entities by name, uuid or id", async () => {
    const [d1] = acme.domains;
    const app = acme.application;
    const sub = acme.subscriber;
    const reachable = [
      "/customers/acme/calls", `/customers/${uuids.customer}/calls`, `/customers/${acme.id}/calls`, "/tenants/ACME/calls",
      `/customers/acme/domains/${d1}/calls`, `/domains/${uuids.domain}/calls`, `/domains/${acme.domainIds[0]}/calls`,
      `/customers/acme/domains/${d1}/applications/${app.name}/calls`, `/applications/${uuids.application}/calls`, `/applications/${app.id}/calls`,
      `/customers/acme/domains/${d1}/subscribers/${sub.msisdn}/calls`, `/subscribers/${uuids.subscriber}/calls`, `/subscribers/${sub.id}/calls`,
    ];
    // Named, but not reachable by this key: unknown names, another customer's, a domain under the wrong customer.
    const refused = ["/customers/initech/calls", "/customers/globex/calls", "/customers/acme/domains/sip.globex.example/calls", "/applications/voicemail/calls"];
    const key = acme.keys.customer;
    const warming = statements(logs);
    for (const path of reachable) expect(await reaches(svc, key, path), path).toBe(true);
    for (const path of refused) expect(await reaches(svc, key, path), path).toBe(false);
    const warmUp = statements(logs) - warming;
    expect(warmUp).toBeGreaterThan(reachable.length); // the count sees the look-ups: each path cost at least one

    // Traffic for a second and a half: answers are kept with no time limit (the key cache's 30 s is
    // another matter), so none of it reaches the database.
    const warm = statements(logs);
    const warmAt = performance.now();
    let rounds = 0;
    for (; rounds < 10 || performance.now() - warmAt < 1_500; rounds++) {
      const answers = await Promise.all([...reachable, ...refused].map((path) => reaches(svc, key, path)));
      expect(answers).toEqual([...reachable.map(() => true), ...refused.map(() => false)]);
    }
    const asked = rounds * (reachable.length + refused.length) * 2;
    console.log(`[directory cache, ${backend}] warm-up: ${warmUp} statements; then ${asked} requests (/auth and /verify) over ${Math.round(performance.now() - warmAt)} ms: ${statements(logs) - warm} statements`);
    expect(statements(logs) - warm).toBe(0);
  });
});

describe.each(backends())("a directory change across two processes on one %s database", (backend) => {
  let a: TestService;
  let b: TestService;
  let acme: Tenant;

  beforeAll(async () => {
    a = await startService(backend, JOBS_OUT_OF_THE_WAY);
    b = await startPeer(a, JOBS_OUT_OF_THE_WAY);
    acme = await createTenant(a, "acme");
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it("a domain or an application deleted through the admin API is refused at once on that process, within a second on the other", async () => {
    const key = acme.keys.customer;
    const domainPath = `/customers/acme/domains/${acme.domains[1]}/calls`;
    const appPath = `/domains/${acme.domains[0]}/applications/ivr/calls`;
    for (const path of [domainPath, appPath]) {
      for (const svc of [a, b]) expect(await reaches(svc, key, path)).toBe(true);
    }
    const delays: number[] = [];
    for (const [path, entity] of [[domainPath, `/admin/customers/acme/domains/${acme.domains[1]}`], [appPath, `/admin/customers/acme/domains/${acme.domains[0]}/applications/ivr`]] as const) {
      expect((await a.admin.delete(entity)).status).toBe(204);
      const deletedAt = performance.now();
      expect(await reaches(a, key, path)).toBe(false);
      delays.push(await within1s(b, key, path, false, deletedAt));
    }
    console.log(`[directory cache, ${backend}] deletions refused on the other process after ${delays.map((d) => d.toFixed(1)).join(", ")} ms`);
  });

  it("a domain, application or subscriber created through the admin API resolves at once on that process, within a second on the other, where it was looked for before", async () => {
    const key = acme.keys.customer;
    const created = [
      ["/customers/acme/domains/new.acme.example/calls", "/admin/customers/acme/domains", { domain: "new.acme.example" }],
      [`/domains/${acme.domains[0]}/applications/voicemail/calls`, `/admin/customers/acme/domains/${acme.domains[0]}/applications`, { name: "voicemail" }],
      [`/domains/${acme.domains[0]}/subscribers/12125550177/calls`, `/admin/customers/acme/domains/${acme.domains[0]}/subscribers`, { msisdn: "12125550177" }],
    ] as const;
    const delays: number[] = [];
    for (const [path, collection, body] of created) {
      // Not found, on both, twice: each now holds that answer.
      for (const svc of [a, b, a, b]) expect(await reaches(svc, key, path)).toBe(false);
      expect((await a.admin.post(collection, body)).status).toBe(201);
      const createdAt = performance.now();
      expect(await reaches(a, key, path)).toBe(true);
      delays.push(await within1s(b, key, path, true, createdAt));
    }
    console.log(`[directory cache, ${backend}] creations resolved on the other process after ${delays.map((d) => d.toFixed(1)).join(", ")} ms`);
  });

  it("a domain renamed behind the service's back, by SQL, is known by its new name and no longer by its old one on both processes within a second", async () => {
    const key = acme.keys.customer;
    expect((await a.admin.post("/admin/customers/acme/domains", { domain: "old.acme.example" })).status).toBe(201);
    const oldPath = "/customers/acme/domains/old.acme.example/calls";
    const newPath = "/customers/acme/domains/renamed.acme.example/calls";
    for (const svc of [a, b]) {
      expect(await reaches(svc, key, oldPath)).toBe(true);
      expect(await reaches(svc, key, newPath)).toBe(false);
    }
    await a.database.db.query("UPDATE domains SET domain = 'renamed.acme.example' WHERE domain = 'old.acme.example'");
    const renamedAt = performance.now();
    for (const svc of [a, b]) {
      await within1s(svc, key, oldPath, false, renamedAt);
      await within1s(svc, key, newPath, true, renamedAt);
    }
  });
});

/**
 * A database whose notification connection the test loses and restores: while "lost", announcements
 * are dropped, as they would be with the connection gone, and the service is told so.
 */
function withLosableListening(database: TestDatabase): { database: TestDatabase; lose(): void; restore(): void } {
  let onReset: ((state: ListenState) => void) | undefined;
  let lost = false;
  const db: Database = {
    ...database.db,
    listen: (channels, reset) => {
      onReset = reset;
      const unlessLost = Object.fromEntries(Object.entries(channels).map(([channel, handler]) => [channel, (payload: string) => void (lost || handler(payload))]));
      return database.db.listen(unlessLost, reset);
    },
  };
  const report = (state: ListenState) => {
    lost = state === "lost";
    onReset?.(state);
  };
  return { database: { ...database, db }, lose: () => report("lost"), restore: () => report("restored") };
}

describe.each(backends())("path resolution while the notification connection is lost (%s)", (backend: Backend) => {
  it("resolves every path from the database, so a change it does not hear shows at once; once restored, keeps answers again", async () => {
    const logs: string[] = [];
    const listening = withLosableListening(await openTestDatabase(backend, captureLogger(logs)));
    const svc = await startService(backend, { database: listening.database, ...JOBS_OUT_OF_THE_WAY });
    try {
      const acme = await createTenant(svc, "acme");
      const key = acme.keys.customer;
      const domainPath = `/customers/acme/domains/${acme.domains[1]}/calls`;
      const laterPath = "/customers/acme/domains/later.acme.example/calls";
      expect(await reaches(svc, key, domainPath)).toBe(true);
      expect(await reaches(svc, key, laterPath)).toBe(false);

      listening.lose();
      // Changed behind the service's back while it cannot hear of it: the very next answers show it.
      await svc.database.db.query("UPDATE domains SET deleted_at = now() WHERE domain = $1", [acme.domains[1]]);
      await svc.database.db.query("INSERT INTO domains (tenant_id, domain, created_at, modified_at) VALUES ($1, 'later.acme.example', now(), now())", [acme.id]);
      expect(await reaches(svc, key, domainPath)).toBe(false);
      expect(await reaches(svc, key, laterPath)).toBe(true);
      // Nothing is kept meanwhile: every request asks.
      const lostAt = statements(logs);
      for (let i = 0; i < 5; i++) expect(await authReaches(svc, key, laterPath)).toBe(true);
      expect(statements(logs) - lostAt).toBeGreaterThanOrEqual(5);

      listening.restore();
      // Warms the key and both paths again; from then on, no query.
      expect(await reaches(svc, key, laterPath)).toBe(true);
      expect(await reaches(svc, key, domainPath)).toBe(false);
      const warm = statements(logs);
      for (let i = 0; i < 5; i++) {
        expect(await reaches(svc, key, laterPath)).toBe(true);
        expect(await reaches(svc, key, domainPath)).toBe(false);
      }
      expect(statements(logs) - warm).toBe(0);
    } finally {
      await svc.stop();
    }
  });
});

describe.runIf(backends().includes("postgres"))("path resolution with the notification connection cut (PostgreSQL)", () => {
  it("answers from the database while the process cannot listen: a domain deleted elsewhere is refused at once", { timeout: 30_000 }, async () => {
    const a = await startService("postgres", JOBS_OUT_OF_THE_WAY);
    const url = a.database.url!;
    const bLogs: string[] = [];
    // B checks its notification connection only once a minute: once cut, it stays lost for this test.
    const bDb = openPostgres({ connectionString: url, log: captureLogger(bLogs), listenCheckMs: 60_000 });
    const b = await startService("postgres", { ...JOBS_OUT_OF_THE_WAY, masterKey: a.masterKey, database: { db: bDb, url, drop: () => bDb.close() } });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const acme = await createTenant(a, "acme");
      const key = acme.keys.customer;
      const path = `/customers/acme/domains/${acme.domains[1]}/calls`;
      expect(await reaches(b, key, path)).toBe(true);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'keyplane-listen'");
      await expect.poll(() => bLogs.join("").includes("notification connection lost")).toBe(true);
      expect(await reaches(b, key, path)).toBe(true);
      expect((await a.admin.delete(`/admin/customers/acme/domains/${acme.domains[1]}`)).status).toBe(204);
      // B heard nothing (it is not listening), yet its very next answer is the database's.
      expect(await reaches(b, key, path)).toBe(false);
      expect(bLogs.join("")).not.toContain("notification connection restored");
    } finally {
      await admin.end();
      await b.stop();
      await a.stop();
    }
  });
});
