// Key policy on POST /verify (docs/api.md, "Key policy"): the checks in order (token, level,
// restrictions, rate limits, credits), the figures every verdict of a key with limits or credits
// carries, all-or-nothing charging across levels, cost 0, refills on the service's clock, and a change
// of policy in force without restarting anything. In one process, on each backend.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Policy } from "../../src/domain/policy/policy.ts";
import { fakeClock, type FakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { setBalance, setPolicy, type Holder } from "../support/policy.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

interface Verdict {
  valid: boolean;
  code: string;
  reason?: string;
  key?: { id: number };
  ratelimits?: { name: string; scope: string; limit: number; remaining: number; reset: number; exceeded: boolean }[];
  credits?: { remaining: number };
}

describe.each(backends())("key policy on POST /verify (%s)", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let time: FakeClock;
  let keyIds: Record<string, number>;
  // Ten minutes into an hour: an hour's window has 3,000 s left.
  const START = "2026-11-23T10:10:00.000Z";

  const verify = async (body: Record<string, unknown>): Promise<Verdict> => {
    const res = await supertest(svc.app).post("/verify").send(body);
    expect(res.status, res.text).toBe(200);
    return res.body as Verdict;
  };
  const holder = (key: keyof Tenant["keys"]): Holder => `key:${keyIds[key]!}`;
  const policy = (h: Holder, p: Policy | null) => setPolicy(svc.ctx.db, h, p, time.now());
  /** Until the service sees what a change made (an announcement away, on this process too). */
  const eventually = async <T>(ask: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    const until = Date.now() + 1_000;
    for (;;) {
      const value = await ask();
      if (done(value) || Date.now() > until) return value;
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  beforeAll(async () => {
    time = fakeClock(START);
    svc = await startService(backend, { clock: time.clock });
    acme = await createTenant(svc, "acme");
    keyIds = {};
    for (const [name, token] of Object.entries(acme.keys)) keyIds[name] = ((await svc.as(token).get("/keys/self")).body as { id: number }).id;
  });
  afterAll(() => svc?.stop());

  it("says nothing of limits or credits for a key no policy binds", async () => {
    const v = await verify({ key: acme.keys.otherDomain, path: `/domains/${acme.domains[1]}/calls` });
    expect(v).toMatchObject({ valid: true, code: "VALID" });
    expect(v).not.toHaveProperty("ratelimits");
    expect(v).not.toHaveProperty("credits");
  });

  it("refuses what the restrictions of any level refuse, saying which, and a restriction whose input is missing", async () => {
    const d = acme.domains[0];
    await policy(`domain:${acme.domainIds[0]}`, { restrictions: { ips: ["203.0.113.0/24"] } });
    await policy(holder("domain"), { restrictions: { methods: ["GET"], paths: ["/domains/*/calls/**"] } });
    const key = acme.keys.domain;
    const path = `/domains/${d}/calls/7`;
    expect(await eventually(() => verify({ key, path, ip: "203.0.113.9", method: "POST" }), (v) => v.code === "RESTRICTED")).toMatchObject({ reason: "method" });
    expect(await eventually(() => verify({ key, path }), (v) => v.code === "RESTRICTED")).toMatchObject({ valid: false, reason: "ip", key: { id: keyIds.domain } });
    expect(await verify({ key, path, ip: "203.0.113.9" })).toMatchObject({ valid: true, code: "VALID" });
    expect(await verify({ key, path, ip: "198.51.100.1" })).toMatchObject({ code: "RESTRICTED", reason: "ip" });
    expect(await verify({ key, path: `/domains/${d}/invoices`, ip: "203.0.113.9" })).toMatchObject({ code: "RESTRICTED", reason: "path" });
    expect(await verify({ key, ip: "203.0.113.9" })).toMatchObject({ code: "RESTRICTED", reason: "path" });
    // A spelling that one upstream reads as another path is judged by every reading.
    expect(await verify({ key, path: `/domains/${d}/calls/..%2Finvoices`, ip: "203.0.113.9" })).toMatchObject({ code: "RESTRICTED", reason: "path" });
    // The level rules come first: a path the key may not reach is FORBIDDEN, whatever the restrictions say.
    expect(await verify({ key, path: `/domains/${acme.domains[1]}/calls/7`, ip: "198.51.100.1" })).toMatchObject({ code: "FORBIDDEN" });
    // Another domain's keys are not bound by this domain's policy.
    expect(await verify({ key: acme.keys.otherDomain })).toMatchObject({ code: "VALID" });
    expect((await supertest(svc.app).post("/verify").send({ key, ip: "not an address" })).status).toBe(400);
    await policy(`domain:${acme.domainIds[0]}`, null);
    await policy(holder("domain"), null);
    await eventually(() => verify({ key, path }), (v) => v.code === "VALID");
  });

  it("admits a window's limit, then refuses until the window ends, with each limit's figures", async () => {
    await policy(holder("application"), { ratelimits: [{ name: "calls", limit: 3, windowSeconds: 3600 }] });
    const key = acme.keys.application;
    await eventually(() => verify({ key }), (v) => v.ratelimits !== undefined);
    // That first call counted: two are left.
    const seen = [await verify({ key }), await verify({ key }), await verify({ key })];
    expect(seen.map((v) => v.code)).toEqual(["VALID", "VALID", "RATE_LIMITED"]);
    expect(seen.map((v) => v.ratelimits![0]!.remaining)).toEqual([1, 0, 0]);
    expect(seen[2]).toMatchObject({ valid: false, key: { id: keyIds.application }, ratelimits: [{ name: "calls", scope: "key", limit: 3, reset: 3000, exceeded: true }] });
    time.advance(3_000_000);
    expect(await verify({ key })).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 2, reset: 3600, exceeded: false }] });
  });

  it("charges a request to every level's limits and credits, or, refused at any of them, to none", async () => {
    await policy(`customer:${acme.id}`, { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 3600 }], credits: { remaining: 50 } });
    await policy(holder("subscriber"), { ratelimits: [{ name: "burst", limit: 2, windowSeconds: 3600 }] });
    const key = acme.keys.subscriber;
    // Asked on a path the key may not reach until both policies are seen: a FORBIDDEN request charges nothing.
    await eventually(() => verify({ key, path: `/domains/${acme.domains[1]}/calls` }), (v) => v.ratelimits?.length === 2);
    expect(await verify({ key })).toMatchObject({ code: "VALID", credits: { remaining: 49 } });
    const calls = (v: Verdict) => v.ratelimits!.find((r) => r.name === "calls")!;
    const second = await verify({ key });
    expect(second).toMatchObject({ code: "VALID", credits: { remaining: 48 } });
    const refused = await verify({ key });
    expect(refused).toMatchObject({ code: "RATE_LIMITED", credits: { remaining: 48 } });
    expect(refused.ratelimits!.find((r) => r.name === "burst")).toMatchObject({ scope: "key", remaining: 0, exceeded: true });
    expect(calls(refused)).toMatchObject({ scope: "customer", remaining: calls(second).remaining, exceeded: false });
    // The customer's other keys share its limit and its credits: the refused request took neither.
    expect(await verify({ key: acme.keys.customerUser })).toMatchObject({ code: "VALID", credits: { remaining: 47 } });
    await policy(`customer:${acme.id}`, null);
    await policy(holder("subscriber"), null);
  });

  it("refuses a cost of 0 where 1 would be refused, and charges nothing for it", async () => {
    await policy(holder("customer"), { ratelimits: [{ name: "units", limit: 5, windowSeconds: 3600 }] });
    const key = acme.keys.customer;
    expect(await eventually(() => verify({ key, cost: 0 }), (v) => v.ratelimits !== undefined)).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 5 }] });
    expect(await verify({ key, cost: 4 })).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 1 }] });
    expect(await verify({ key, cost: 2 })).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ remaining: 1, exceeded: true }] });
    expect(await verify({ key, cost: 1 })).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 0 }] });
    expect(await verify({ key, cost: 0 })).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ remaining: 0, exceeded: true }] });
    for (const cost of [-1, 1001, 1.5, "1"]) expect((await supertest(svc.app).post("/verify").send({ key, cost })).status).toBe(400);
    await policy(holder("customer"), null);
  });

  it("says USAGE_EXCEEDED once the credits are spent, and what is left in every verdict, FORBIDDEN ones included", async () => {
    await policy(holder("otherDomain"), { credits: { remaining: 2 } });
    const key = acme.keys.otherDomain;
    expect(await eventually(() => verify({ key }), (v) => v.credits !== undefined)).toMatchObject({ code: "VALID", credits: { remaining: 1 } });
    expect(await verify({ key, path: `/domains/${acme.domains[0]}/calls` })).toMatchObject({ code: "FORBIDDEN", credits: { remaining: 1 } });
    expect(await verify({ key })).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
    expect(await verify({ key })).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: { remaining: 0 } });
    await setBalance(svc.ctx.db, holder("otherDomain"), 1, time.now());
    expect(await eventually(() => verify({ key }), (v) => v.code === "VALID")).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
    await policy(holder("otherDomain"), null);
  });

  it("refills daily at midnight UTC and monthly on the month's last day when `day` is past it", async () => {
    time.set("2026-11-29T23:59:59.500Z");
    await policy(holder("domainUser"), { credits: { remaining: 1, refill: { amount: 3, interval: "daily" } } });
    await policy(`application:${acme.application.id}`, { credits: { remaining: 1, refill: { amount: 5, interval: "monthly", day: 31 } } });
    const daily = acme.keys.domainUser;
    expect(await eventually(() => verify({ key: daily }), (v) => v.credits !== undefined)).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
    expect(await verify({ key: daily })).toMatchObject({ code: "USAGE_EXCEEDED" });
    const monthly = acme.keys.application;
    await policy(holder("application"), null);
    expect(await eventually(() => verify({ key: monthly }), (v) => v.credits !== undefined)).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
    expect(await verify({ key: monthly })).toMatchObject({ code: "USAGE_EXCEEDED" });
    // November has 30 days: a refill on the 31st comes on the 30th, at the same midnight as the daily one.
    time.advance(500);
    expect(await verify({ key: daily })).toMatchObject({ code: "VALID", credits: { remaining: 2 } });
    expect(await verify({ key: monthly })).toMatchObject({ code: "VALID", credits: { remaining: 4 } });
    // Across the month's end: the monthly one waits for December's 31st; the daily one refills on the 1st.
    time.set("2026-12-01T00:00:00.000Z");
    expect(await verify({ key: daily })).toMatchObject({ code: "VALID", credits: { remaining: 2 } });
    expect(await verify({ key: monthly })).toMatchObject({ code: "VALID", credits: { remaining: 3 } });
    time.set("2026-12-31T00:00:00.000Z");
    expect(await verify({ key: monthly })).toMatchObject({ code: "VALID", credits: { remaining: 4 } });
    time.set("2027-01-05T10:10:00.000Z");
    await policy(`application:${acme.application.id}`, null);
    await policy(holder("domainUser"), null);
  });

  it("puts a changed limit in force on the next request, and forgets a removed one", async () => {
    const key = acme.keys.customerUser;
    await policy(`customer:${acme.id}`, { ratelimits: [{ name: "calls", limit: 1000, windowSeconds: 3600 }] });
    expect(await eventually(() => verify({ key }), (v) => v.ratelimits?.[0]?.limit === 1000)).toMatchObject({ code: "VALID" });
    await policy(`customer:${acme.id}`, { ratelimits: [{ name: "calls", limit: 1, windowSeconds: 3600 }] });
    expect(await eventually(() => verify({ key }), (v) => v.code === "RATE_LIMITED")).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ limit: 1 }] });
    await policy(`customer:${acme.id}`, null);
    const freed = await eventually(() => verify({ key }), (v) => v.ratelimits === undefined);
    expect(freed).toMatchObject({ code: "VALID" });
    expect(freed).not.toHaveProperty("ratelimits");
  });
});
