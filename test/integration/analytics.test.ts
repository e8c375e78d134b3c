// Usage analytics (docs/analytics.md): every verdict of /verify and /auth for a known key counted by
// outcome, minute and key lineage, written by each process and summed exactly; read back by minute, hour
// and day on the key paths, /analytics and /admin/analytics; kept per grain and removed by partition. In
// this process with a fake clock, on each backend (real processes: analytics-processes.test.ts).
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OUTCOMES } from "../../src/domain/analytics/usage.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startPeer, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

type Key = { id: number; keyId: string };
type Counts = Record<(typeof OUTCOMES)[number] | "credits", number>;
type Answer = { interval: string; from: string; to: string; buckets: ({ start: string } & Counts)[] };
type ScopeAnswer = Answer & { top: ({ id: number; name: string; requests: number } & Counts)[] };

const zeros = (): Counts => ({ valid: 0, restricted: 0, rateLimited: 0, usageExceeded: 0, forbidden: 0, disabled: 0, expired: 0, credits: 0 });
const OUTCOME_OF: Record<string, keyof Counts> = {
  VALID: "valid", RESTRICTED: "restricted", RATE_LIMITED: "rateLimited", USAGE_EXCEEDED: "usageExceeded", FORBIDDEN: "forbidden", DISABLED: "disabled", EXPIRED: "expired",
};
const sum = (buckets: Counts[]) => buckets.reduce((total, b) => {
  for (const k of Object.keys(total) as (keyof Counts)[]) total[k] += b[k];
  return total;
}, zeros());
const countsOf = (b: { start: string } & Counts): Counts => {
  const { start: _start, ...counts } = b;
  return counts;
};

describe.each(backends())("usage analytics on %s", (backend) => {
  const time = fakeClock("2026-11-23T10:10:00.000Z");
  let svc: TestService;
  let peer: TestService;
  let acme: Tenant;
  let root: ReturnType<TestService["as"]>;
  /** What each key's verdicts were, as the answers said: what analytics must show. */
  const expected = new Map<number, Map<string, Counts>>();

  const ok = async <T = Key>(request: PromiseLike<{ status: number; body: unknown }>, status = 200): Promise<T> => {
    const res = await request;
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    return res.body as T;
  };
  const tally = (key: Key, outcome: keyof Counts, credits = 0) => {
    const minute = new Date(Math.floor(time.now().getTime() / 60_000) * 60_000).toISOString();
    const byMinute = expected.get(key.id) ?? new Map<string, Counts>();
    expected.set(key.id, byMinute);
    const counts = byMinute.get(minute) ?? zeros();
    byMinute.set(minute, counts);
    counts[outcome] += 1;
    counts.credits += credits;
  };
  /** POST /verify on `on`, tallied under `key` as its answer says. */
  const verify = async (on: TestService, key: Key, body: object = {}, credits = 0) => {
    const v = await ok<{ code: string }>(supertest(on.app).post("/verify").send({ key: key.keyId, ...body }));
    tally(key, OUTCOME_OF[v.code]!, v.code === "VALID" ? credits : 0);
    return v.code;
  };
  /** GET /auth on `on` (costing 1 where a balance binds the key), tallied as its status says. */
  const auth = async (on: TestService, key: Key, path = "/customers/acme/calls", credits = 0) => {
    const res = await supertest(on.app).get("/auth").set("Authorization", `Bearer ${key.keyId}`).set("X-Original-Method", "GET").set("X-Original-URI", path);
    tally(key, res.status === 200 ? "valid" : res.status === 403 ? "restricted" : "forbidden", res.status === 200 ? credits : 0);
    return res.status;
  };
  const made = (name: string, policy?: object, by = root) => ok(by.post("/keys", { name, ...(policy && { policy }) }));
  const writeAll = async () => {
    await svc.analytics.write();
    await peer.analytics.write();
  };

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    peer = await startPeer(svc, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    acme = await createTenant(svc, "acme");
    await createTenant(svc, "globex");
    root = svc.as(acme.keys.customer);
  });
  afterAll(async () => {
    await peer?.stop();
    await svc?.stop();
  });

  it("counts every verdict on a known key by outcome and credits, exactly across two processes, by minute, hour and day", async () => {
    const billing = await made("billing", { credits: { remaining: 1_000 }, restrictions: { methods: ["GET", "POST"] } });
    const disabled = await made("disabled");
    const limited = await made("limited", { ratelimits: [{ name: "one", limit: 1, windowSeconds: 3_600 }] });
    const spent = await made("spent", { credits: { remaining: 1 } });
    const expiring = await made("expiring");
    await ok(root.put(`/keys/${expiring.id}`, { expiresAt: "2026-11-23T10:12:30.000Z" }));
    await ok(root.put(`/keys/${disabled.id}`, { active: false }));

    for (let i = 0; i < 3; i++) expect(await verify(svc, billing, {}, 1)).toBe("VALID");
    expect(await verify(svc, billing, { path: "/customers/globex/calls" })).toBe("FORBIDDEN");
    expect(await verify(svc, billing, { method: "DELETE" })).toBe("RESTRICTED");
    expect(await auth(peer, billing, undefined, 1)).toBe(200);
    expect(await verify(svc, disabled)).toBe("DISABLED");
    expect(await verify(peer, limited)).toBe("VALID");
    expect(await verify(svc, limited)).toBe("RATE_LIMITED");
    expect(await verify(peer, spent, {}, 1)).toBe("VALID");
    expect(await verify(peer, spent)).toBe("USAGE_EXCEEDED");
    // Tokens of no key, and keyplane's own key paths, are nobody's usage.
    await ok(supertest(svc.app).post("/verify").send({ key: `XI${"0".repeat(32)}` }));
    await ok(supertest(svc.app).post("/verify").send({ key: "not-a-token" }));
    await ok(svc.as(billing.keyId).get("/keys/self"));

    time.advance(60_000);
    expect(await verify(peer, billing, { cost: 5 }, 5)).toBe("VALID");
    expect(await auth(svc, billing, "/customers/globex/calls")).toBe(401);
    time.advance(3 * 60_000);
    expect(await verify(svc, expiring)).toBe("EXPIRED");
    await writeAll();

    for (const key of [billing, disabled, limited, spent]) {
      const minutes = await ok<Answer>(root.get(`/keys/${key.id}/analytics?interval=minute&from=2026-11-23T10:00:00Z&to=2026-11-23T11:00:00Z`));
      const want = expected.get(key.id)!;
      expect(minutes.buckets).toHaveLength(60);
      for (const b of minutes.buckets) expect(countsOf(b), `${key.id} ${b.start}`).toEqual(want.get(b.start) ?? zeros());
      const hours = await ok<Answer>(root.get(`/keys/${key.id}/analytics?interval=hour&from=2026-11-23T09:00:00Z&to=2026-11-23T12:00:00Z`));
      expect(hours.buckets.map(countsOf)).toEqual([zeros(), sum([...want.values()]), zeros()]);
      const days = await ok<Answer>(root.get(`/keys/${key.id}/analytics?interval=day&from=2026-11-22T00:00:00Z`));
      expect(days).toMatchObject({ interval: "day", from: "2026-11-22T00:00:00.000Z", to: "2026-11-24T00:00:00.000Z" });
      expect(days.buckets.map(countsOf)).toEqual([zeros(), sum([...want.values()])]);
    }
    // An expired key is gone, as a deleted one: its own history with it, its verdicts in its scope's.
    await ok(root.get(`/keys/${expiring.id}/analytics`), 404);
    const scope = await ok<ScopeAnswer>(root.get("/analytics?from=2026-11-23T10:00:00Z&top=100"));
    expect(scope.top.find((k) => k.id === expiring.id)).toMatchObject({ requests: 1, expired: 1 });
    // Writing again adds nothing: what was written is gone from memory.
    await writeAll();
    const again = await ok<Answer>(root.get(`/keys/${billing.id}/analytics?interval=day&from=2026-11-23T00:00:00Z`));
    expect(countsOf(again.buckets[0]!)).toEqual(sum([...expected.get(billing.id)!.values()]));
  });

  it("goes on under a rotated key's new key; the old key's own history is 404 once it is gone", async () => {
    const old = await made("rotating");
    await verify(svc, old);
    await verify(peer, old);
    const rotated = await ok(root.post(`/keys/${old.id}/rotate`, {}));
    expected.set(rotated.id, expected.get(old.id)!);
    await verify(svc, rotated);
    await writeAll();
    const day = await ok<Answer>(root.get(`/keys/${rotated.id}/analytics?interval=day&from=2026-11-23T00:00:00Z`));
    expect(day.buckets[0]).toMatchObject({ valid: 3 });
    await ok(root.get(`/keys/${old.id}/analytics`), 404);
  });

  it("answers a deleted key's history 404, as the key is, while its traffic stays in the scope's sums", async () => {
    const gone = await made("deleted-later");
    for (let i = 0; i < 4; i++) await verify(svc, gone);
    await writeAll();
    await ok(root.delete(`/keys/${gone.id}`), 204);
    await ok(root.get(`/keys/${gone.id}/analytics`), 404);
    const scope = await ok<ScopeAnswer>(root.get("/analytics?interval=day&from=2026-11-23T00:00:00Z&top=100"));
    expect(scope.top.find((k) => k.id === gone.id)).toMatchObject({ name: "deleted-later", requests: 4, valid: 4 });
  });

  it("sums every key the caller may manage on /analytics, with the most used keys first", async () => {
    await writeAll();
    // A rotated key's counts are tallied under both its keys: once each.
    const totals = sum([...new Set(expected.values())].flatMap((byMinute) => [...byMinute.values()]));
    const scope = await ok<ScopeAnswer>(root.get("/analytics?interval=hour&from=2026-11-23T10:00:00Z&to=2026-11-23T11:00:00Z&top=3"));
    expect(scope.buckets.map(countsOf)).toEqual([totals]);
    expect(scope.top).toHaveLength(3);
    const requests = scope.top.map((k) => k.requests);
    expect(requests).toEqual([...requests].sort((a, b) => b - a));
    expect(scope.top[0]).toMatchObject({ name: "billing", requests: 8, valid: 5, credits: 9, forbidden: 2, restricted: 1 });
    // The admin sees the same for acme, nothing for globex; a domain narrows only a customer.
    const admin = await ok<ScopeAnswer>(svc.admin.get("/admin/analytics?customer=acme&interval=hour&from=2026-11-23T10:00:00Z&to=2026-11-23T11:00:00Z&top=3"));
    expect(admin).toEqual(scope);
    const globex = await ok<ScopeAnswer>(svc.admin.get("/admin/analytics?customer=globex&interval=hour&from=2026-11-23T10:00:00Z&to=2026-11-23T11:00:00Z"));
    expect(globex.buckets.map(countsOf)).toEqual([zeros()]);
    expect(globex.top).toEqual([]);
    const everyone = await ok<ScopeAnswer>(svc.admin.get("/admin/analytics?interval=hour&from=2026-11-23T10:00:00Z&to=2026-11-23T11:00:00Z"));
    expect(everyone.buckets.map(countsOf)).toEqual([totals]);
    await ok(svc.admin.get(`/admin/analytics?customer=acme&domain=${acme.domains[1]}`));
    expect((await ok<{ error: string }>(svc.admin.get(`/admin/analytics?domain=${acme.domains[0]}`), 400)).error).toBe("bad_request");
    await ok(svc.admin.get("/admin/analytics?customer=no-such-customer"), 404);
    await ok(root.get("/admin/analytics"), 401);
  });

  it("shows a restricted key only itself and its descendants", async () => {
    const restricted = await made("restricted", { restrictions: { methods: ["GET", "POST", "DELETE"] } });
    const child = await made("child", undefined, svc.as(restricted.keyId));
    await verify(svc, child);
    await verify(svc, child);
    await verify(svc, restricted);
    await writeAll();
    const scope = await ok<ScopeAnswer>(svc.as(restricted.keyId).get("/analytics?interval=day&from=2026-11-23T00:00:00Z"));
    expect(scope.buckets[0]).toMatchObject({ valid: 3 });
    expect(scope.top.map((k) => [k.name, k.requests])).toEqual([["child", 2], ["restricted", 1]]);
    await ok(svc.as(restricted.keyId).get(`/keys/${acme.keys.domain}/analytics`), 404);
  });

  it("answers the default range, 25 hourly buckets ending with the current hour's end, on every spelling of a key base", async () => {
    const key = await made("default-range");
    const paths = [`/keys/${key.id}/analytics`, `/apikeys/${key.id}/analytics`, `/tenants/acme/keys/${key.id}/analytics`, `/domains/${acme.domains[0]}/keys/self/analytics`];
    for (const path of paths) {
      const answer = await ok<Answer>((path.includes("self") ? svc.as(acme.keys.domain) : root).get(path));
      expect(answer).toMatchObject({ interval: "hour", from: "2026-11-22T10:00:00.000Z", to: "2026-11-23T11:00:00.000Z" });
      expect(answer.buckets).toHaveLength(25);
    }
  });

  it.each([
    ["a from older than its interval is kept", "interval=minute&from=2026-11-21T00:00:00Z&to=2026-11-21T01:00:00Z"],
    ["over 2,000 buckets", "interval=minute&from=2026-11-22T00:00:00Z&to=2026-11-23T10:00:00Z"],
    ["from after to", "from=2026-11-23T10:00:00Z&to=2026-11-23T09:00:00Z"],
    ["an unknown interval", "interval=week"],
    ["a time without an offset", "from=2026-11-23T10:00:00"],
    ["a top over 100", "top=101"],
  ])("refuses %s with 400 and the JSON error body", async (_name, query) => {
    const path = query.startsWith("top") ? `/analytics?${query}` : `/keys/self/analytics?${query}`;
    const body = await ok<{ status: number; error: string; message: string }>(root.get(path), 400);
    expect(body).toMatchObject({ status: 400, error: "bad_request" });
  });
});

describe("usage analytics turned off (KEYPLANE_ANALYTICS=off)", () => {
  it("counts nothing, and still answers what was written", async () => {
    const svc = await startService("pglite", { analytics: { counting: false } });
    try {
      await svc.admin.post("/admin/customers", { name: "acme" }).expect(201);
      const key = (await svc.admin.post("/admin/customers/acme/keys", { name: "root" }).expect(200)).body as Key;
      await supertest(svc.app).post("/verify").send({ key: key.keyId }).expect(200);
      await svc.analytics.write();
      const answer = (await svc.as(key.keyId).get("/keys/self/analytics").expect(200)).body as Answer;
      expect(sum(answer.buckets.map(countsOf))).toEqual(zeros());
    } finally {
      await svc.stop();
    }
  });
});
