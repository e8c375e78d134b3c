// Key policy on /auth and on keyplane's own key paths (docs/api.md, "Key policy"; docs/gateways.md):
// 403 for a restriction, 429 for a limit (Retry-After to the window's end) or for credits (Retry-After
// to the refill, none without one), the RateLimit fields and the credits left on a 200; restrictions on
// the key paths with the request's own address, referrer, method and path, where nothing is counted;
// while the database cannot be reached, only what the process holds; and the metrics of all this.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import type { Policy } from "../../src/domain/policy/policy.ts";
import { fakeClock, type FakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { setPolicy, type Holder } from "../support/policy.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

describe.each(backends())("key policy on /auth and the key paths (%s)", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let time: FakeClock;
  const holders: Record<string, Holder> = {};

  /** /auth as nginx asks it, for a client behind it at `client`. */
  const auth = (token: string, { uri = "/", client = "203.0.113.7", referer }: { uri?: string; client?: string; referer?: string } = {}) => {
    const req = supertest(svc.app).get("/auth").set("Authorization", `Bearer ${token}`).set("X-Original-Method", "GET").set("X-Original-URI", uri).set("X-Forwarded-For", client);
    return referer === undefined ? req : req.set("Referer", referer);
  };
  const policy = (h: Holder, p: Policy | null) => setPolicy(svc.ctx.db, h, p, time.now());
  const until = async <R extends { status: number }>(ask: () => Promise<R>, status: number): Promise<R> => {
    const deadline = Date.now() + 1_000;
    let res = await ask();
    while (res.status !== status && Date.now() < deadline) res = await ask();
    return res;
  };

  /** Until the service shows a key's figures, asked on a path the key may not reach: which charges nothing. */
  const seen = async (key: string, done: (v: { credits?: unknown; ratelimits?: unknown }) => boolean) => {
    const deadline = Date.now() + 1_000;
    for (;;) {
      const v = (await supertest(svc.app).post("/verify").send({ key, path: "/customers/no-such-customer" })).body as { credits?: unknown };
      if (done(v) || Date.now() > deadline) return;
    }
  };

  beforeAll(async () => {
    time = fakeClock("2026-11-23T10:10:00.000Z");
    svc = await startService(backend, { clock: time.clock, trustedProxies: parseTrustedProxies("127.0.0.1"), metrics: true });
    acme = await createTenant(svc, "acme");
    for (const [name, token] of Object.entries(acme.keys)) holders[name] = `key:${((await svc.as(token).get("/keys/self")).body as { id: number }).id}`;
  });
  afterAll(() => svc?.stop());

  it("answers 200 with the RateLimit fields of the tightest limit and the credits left, then 429 with Retry-After until the window ends", async () => {
    await policy(holders.domain!, { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 3600 }, { name: "burst", limit: 2, windowSeconds: 60 }], credits: { remaining: 50 } });
    const key = acme.keys.domain;
    await seen(key, (v) => v.credits !== undefined && v.ratelimits !== undefined);
    const first = await auth(key);
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({ "ratelimit-policy": '"burst";q=2;w=60', ratelimit: '"burst";r=1;t=60', "x-keyplane-credits-remaining": "49", "x-keyplane-key-id": holders.domain!.slice(4) });
    expect((await auth(key)).headers).toMatchObject({ ratelimit: '"burst";r=0;t=60', "x-keyplane-credits-remaining": "48" });
    time.advance(15_000);
    const refused = await auth(key);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ status: 429, error: "rate_limited" });
    expect(refused.headers).toMatchObject({ "retry-after": "45", "ratelimit-policy": '"burst";q=2;w=60', ratelimit: '"burst";r=0;t=45', "x-keyplane-credits-remaining": "48" });
    expect(refused.headers).not.toHaveProperty("x-keyplane-key-id");
    time.advance(45_000);
    expect((await auth(key)).status).toBe(200);
    await policy(holders.domain!, null);
  });

  it("answers 429 usage_exceeded, with Retry-After until the refill when there is one", async () => {
    await policy(holders.subscriber!, { credits: { remaining: 1 } });
    await policy(holders.application!, { credits: { remaining: 0, refill: { amount: 10, interval: "daily" } } });
    await seen(acme.keys.subscriber, (v) => v.credits !== undefined);
    await seen(acme.keys.application, (v) => v.credits !== undefined);
    expect((await auth(acme.keys.subscriber)).headers["x-keyplane-credits-remaining"]).toBe("0");
    const never = await auth(acme.keys.subscriber);
    expect([never.status, never.body.error, never.headers["x-keyplane-credits-remaining"]]).toEqual([429, "usage_exceeded", "0"]);
    expect(never.headers).not.toHaveProperty("retry-after");
    const refilled = await auth(acme.keys.application);
    const untilMidnight = Math.ceil((Date.parse("2026-11-24T00:00:00Z") - time.now().getTime()) / 1000);
    expect([refilled.status, refilled.body.error, refilled.headers["retry-after"]]).toEqual([429, "usage_exceeded", String(untilMidnight)]);
    await policy(holders.subscriber!, null);
    await policy(holders.application!, null);
  });

  it("answers 403 forbidden to a restricted key on /auth, judging the client behind the gateway and the original Referer", async () => {
    await policy(`customer:${acme.id}`, { restrictions: { ips: ["203.0.113.0/24"], referrers: ["https://*.acme.example/*"] } });
    const key = acme.keys.customer;
    const referer = "https://app.acme.example/calls";
    const refused = await until(() => auth(key, { client: "198.51.100.1", referer }), 403);
    expect([refused.status, refused.body.error]).toEqual([403, "forbidden"]);
    expect(refused.body.message).toMatch(/client address/);
    expect((await auth(key, { referer })).status).toBe(200);
    const noReferer = await auth(key);
    expect([noReferer.status, noReferer.body.message]).toEqual([403, expect.stringMatching(/referrer/)]);
  });

  it("applies restrictions on the key paths too, with the request's own address, referrer and path", async () => {
    const key = acme.keys.customer;
    const self = (client: string, referer?: string) => {
      const req = supertest(svc.app).get("/keys/self").set("Authorization", `Bearer ${key}`).set("X-Forwarded-For", client);
      return referer === undefined ? req : req.set("Referer", referer);
    };
    expect((await self("203.0.113.9", "https://app.acme.example/")).status).toBe(200);
    const refused = await self("198.51.100.1", "https://app.acme.example/");
    expect([refused.status, refused.body.error]).toEqual([403, "forbidden"]);
    expect((await self("203.0.113.9")).status).toBe(403);
    const list = await supertest(svc.app).get("/keys").set("Authorization", `Bearer ${key}`).set("X-Forwarded-For", "198.51.100.1");
    expect([list.status, list.body.error]).toEqual([403, "forbidden"]);
    await policy(`customer:${acme.id}`, null);
    expect((await until(() => self("198.51.100.1"), 200)).status).toBe(200);
  });

  it("counts nothing on the key paths: a key at its limit still reads itself", async () => {
    await policy(holders.otherDomain!, { ratelimits: [{ name: "calls", limit: 1, windowSeconds: 3600 }], credits: { remaining: 1 } });
    const key = acme.keys.otherDomain;
    await seen(key, (v) => v.credits !== undefined);
    expect((await auth(key)).headers).toHaveProperty("ratelimit");
    expect((await auth(key)).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await svc.as(key).get("/keys/self")).status).toBe(200);
    await policy(holders.otherDomain!, null);
  });

  it("counts what policy decided, by result, and leases by kind, without a key's or a customer's name", async () => {
    const text = await svc.metrics!.text();
    for (const result of ["admitted", "restricted", "rate_limited", "usage_exceeded"]) {
      expect(text).toMatch(new RegExp(`keyplane_policy_decisions_total\\{result="${result}"\\} [1-9]`));
    }
    expect(text).toMatch(/keyplane_policy_leases_total\{kind="window",result="taken"\} [1-9]/);
    expect(text).toMatch(/keyplane_policy_leases_total\{kind="balance",result="short"\} [1-9]/);
    expect(text).toMatch(/keyplane_policy_units_held\{kind="balance"\} \d/);
    expect(text).not.toMatch(/acme/);
  });
});

describe("a key with a limit while the database cannot be reached (PGlite, closed under the service)", () => {
  it("is admitted within what this process holds, then answered 503 unavailable", async () => {
    const svc = await startService("pglite");
    try {
      const acme = await createTenant(svc, "acme");
      const key = acme.keys.domain;
      const id = ((await svc.as(key).get("/keys/self")).body as { id: number }).id;
      await setPolicy(svc.ctx.db, `key:${id}`, { ratelimits: [{ name: "calls", limit: 1000, windowSeconds: 2_592_000 }] });
      const verify = () => supertest(svc.app).post("/verify").send({ key });
      for (let i = 0; i < 30; i++) await verify();
      const held = svc.ctx.meter.stats().held.window;
      expect(held).toBeGreaterThan(0);
      await svc.database.db.close();
      for (let i = 0; i < held; i++) expect((await verify()).body).toMatchObject({ code: "VALID", ratelimits: [{ name: "calls" }] });
      const refused = await verify();
      expect([refused.status, refused.body.error]).toEqual([503, "unavailable"]);
    } finally {
      await svc.close().catch(() => undefined);
    }
  });
});
