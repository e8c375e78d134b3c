// Concurrency (docs/api.md, "Keys"): concurrent identical provisioning requests, on one replica or
// several, make exactly one key; and a change made through one replica is seen by another within a
// second. The replicas here are real `keyplane serve` processes sharing one PostgreSQL database.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import type { ServerProcess } from "../support/process.ts";
import { startReplicas, type ReplicaSet } from "../support/replicas.ts";
import { useServed, type Tenant } from "../support/world.ts";

const RACERS = 50;

interface KeyBody {
  id: number;
  keyId: string;
  name: string;
  active: boolean;
  tenantId: number;
  domainId: number | null;
}
interface Answer<T> {
  status: number;
  body: T;
  text: string;
}

async function call<T = unknown>(url: string, method: string, path: string, token: string, body?: object): Promise<Answer<T>> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, text };
}

/** Every answer 200, all of one key: returns it. */
function expectOneKey(answers: Answer<KeyBody>[]): KeyBody {
  for (const a of answers) expect(a.status, a.text).toBe(200);
  const keyIds = new Set(answers.map((a) => a.body.keyId));
  const ids = new Set(answers.map((a) => a.body.id));
  expect({ keyIds: keyIds.size, ids: ids.size }, "distinct keys among the answers").toEqual({ keyIds: 1, ids: 1 });
  return answers[0]!.body;
}

/** Polls GET /keys/self with `token` until it answers `status`; the milliseconds it took. */
async function msUntil(url: string, token: string, status: number, limitMs = 3_000): Promise<number> {
  const startedAt = performance.now();
  for (;;) {
    const a = await call(url, "GET", "/keys/self", token);
    const elapsed = performance.now() - startedAt;
    if (a.status === status) return elapsed;
    if (elapsed > limitMs) throw new Error(`still ${a.status} after ${Math.round(elapsed)} ms, waiting for ${status}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each(backends())("concurrent provisioning on one process (%s)", (backend) => {
  const served = useServed(backend);
  let url: string;
  let acme: Tenant;
  beforeAll(() => ({ url, acme } = served()));

  it(`${RACERS} identical concurrent POSTs make exactly one key`, async () => {
    const path = `/customers/acme/domains/${acme.domains[0]}/keys`;
    const answers = await Promise.all(Array.from({ length: RACERS }, () => call<KeyBody>(url, "POST", path, acme.keys.customer, { name: "race" })));
    const key = expectOneKey(answers);
    expect(key).toMatchObject({ name: "race", active: true, tenantId: acme.id, domainId: acme.domainIds[0] });
    const named = await call<KeyBody[]>(url, "GET", `${path}?name=race`, acme.keys.customer);
    expect(named.body.map((k) => k.id)).toEqual([key.id]);
    const all = await call<KeyBody[]>(url, "GET", "/customers/self/keys", acme.keys.customer);
    expect(all.body.filter((k) => k.name === "race").map((k) => k.id)).toEqual([key.id]);
  });

  it(`${RACERS} concurrent POSTs through every path and key that name one scope make exactly one key`, async () => {
    const d = acme.domains[0];
    const k = acme.keys;
    const ways: [string, string][] = [
      [`/customers/acme/domains/${d}/keys`, k.customer],
      [`/tenants/${acme.id}/domains/${d}/apikeys`, k.customerUser],
      [`/customers/self/domains/${d}/keys`, k.customer],
      [`/domains/${d}/keys`, k.customer],
      [`/domains/self/keys`, k.domain],
      [`/keys`, k.domain],
      [`/apikeys`, k.domainUser], // a user key provisions at its user's scope
    ];
    const answers = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => {
        const [path, token] = ways[i % ways.length]!;
        return call<KeyBody>(url, "POST", path, token, { name: "race-by-all-ways", active: i % 2 === 0 });
      }),
    );
    const key = expectOneKey(answers);
    expect(key).toMatchObject({ tenantId: acme.id, domainId: acme.domainIds[0] });
    const named = await call<KeyBody[]>(url, "GET", "/domains/self/keys?name=race-by-all-ways", k.domain);
    expect(named.body.map((x) => x.id)).toEqual([key.id]);
  });
});

const hasPostgres = backends().includes("postgres");
const skipReason = hasPostgres ? "" : " (skipped: no PostgreSQL server; set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432)";

describe.skipIf(!hasPostgres)(`two keyplane processes on one PostgreSQL database${skipReason}`, () => {
  let database: { url: string; drop(): Promise<void> } | undefined;
  let set: ReplicaSet;
  let p1: ServerProcess;
  let p2: ServerProcess;
  let root: string;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    set = await startReplicas(database.url, ["1", "2"]);
    [p1, p2] = set.replicas.map((r) => r.p) as [ServerProcess, ServerProcess];
    expect(p1.url).not.toBe(p2.url);
    const admin = (p: ServerProcess, path: string, body: object) => call<KeyBody>(p.url, "POST", path, set.adminToken, body);
    expect((await admin(p1, "/admin/customers", { name: "acme" })).status).toBe(201);
    expect((await admin(p2, "/admin/customers/acme/domains", { domain: "sip.acme.example" })).status).toBe(201);
    const made = await admin(p2, "/admin/customers/acme/keys", { name: "root" });
    expect(made.status, made.text).toBe(200);
    root = made.body.keyId;
  }, 60_000);

  afterAll(async () => {
    await set?.stop();
    await database?.drop();
  });

  it("each process serves keys the other made (one master key, one database)", async () => {
    for (const p of [p1, p2]) expect((await call(p.url, "GET", "/keys/self", root)).status).toBe(200);
  });

  it(`${RACERS} concurrent identical POSTs split across both processes make exactly one key`, async () => {
    const answers = await Promise.all(
      Array.from({ length: RACERS }, (_, i) =>
        call<KeyBody>((i % 2 ? p1 : p2).url, "POST", "/customers/self/domains/sip.acme.example/keys", root, { name: "race" }),
      ),
    );
    const key = expectOneKey(answers);
    for (const p of [p1, p2]) {
      const named = await call<KeyBody[]>(p.url, "GET", "/domains/sip.acme.example/keys?name=race", root);
      expect(named.body.map((k) => k.id)).toEqual([key.id]);
    }
  });

  it("a key disabled through one process answers 401 on the other within 1 s, and enabled again, 200", async () => {
    const made = await call<KeyBody>(p1.url, "POST", "/customers/self/keys", root, { name: "to-disable" });
    expect(made.status, made.text).toBe(200);
    const victim = made.body;
    // Both processes have the key in their verification caches.
    for (const p of [p1, p2]) expect((await call(p.url, "GET", "/keys/self", victim.keyId)).status).toBe(200);

    const off = await call<KeyBody>(p1.url, "PUT", `/customers/self/keys/${victim.id}`, root, { active: false });
    expect(off.body).toMatchObject({ id: victim.id, active: false });
    expect((await call(p1.url, "GET", "/keys/self", victim.keyId)).status, "on the process that made the change, at once").toBe(401);
    expect(await msUntil(p2.url, victim.keyId, 401), "ms until the other process refuses the key").toBeLessThan(1_000);

    const on = await call<KeyBody>(p2.url, "PUT", `/customers/self/keys/${victim.keyId}`, root, { active: true });
    expect(on.body).toMatchObject({ id: victim.id, active: true });
    expect(await msUntil(p1.url, victim.keyId, 200), "ms until the other process takes the key again").toBeLessThan(1_000);
  });

  it("a key deleted through one process answers 401 on the other within 1 s", async () => {
    const made = await call<KeyBody>(p2.url, "POST", "/customers/self/keys", root, { name: "to-delete" });
    const victim = made.body;
    for (const p of [p1, p2]) expect((await call(p.url, "GET", "/keys/self", victim.keyId)).status).toBe(200);
    expect((await call(p2.url, "DELETE", `/customers/self/keys/${victim.keyId}`, root)).status).toBe(204);
    expect(await msUntil(p1.url, victim.keyId, 401), "ms until the other process refuses the key").toBeLessThan(1_000);
  });

  it("both processes stop gracefully on SIGTERM: exit code 0", async () => {
    const codes = await Promise.all([p1.stop(), p2.stop()]);
    expect(codes, [p1, p2].map((p) => p.stdout().split("\n").slice(-5).join("\n")).join("\n---\n")).toEqual([0, 0]);
    for (const p of [p1, p2]) expect(p.stdout()).toContain('"msg":"stopped"');
  });
});
