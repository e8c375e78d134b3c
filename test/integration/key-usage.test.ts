// GET {base}/{key-id}/usage (docs/api.md, "Key policy"): what a key has used of every limit and the
// nearest credits that bind it, read by whoever may get the key, charging nothing.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeClock, type FakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { setPolicy } from "../support/policy.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

interface Usage {
  ratelimits: { name: string; scope: string; limit: number; windowSeconds: number; remaining: number; reset: number }[];
  credits: { scope: string; remaining: number; nextRefillAt: string | null } | null;
}

describe.each(backends())("key usage (%s)", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let other: Tenant;
  let time: FakeClock;
  let domainKeyId: number;
  // 40 s into a minute: a minute's window has 20 s left.
  const START = "2026-11-23T10:10:40.000Z";

  const usage = async (token: string, path: string) => {
    const res = await svc.as(token).get(path);
    return { status: res.status, body: res.body as Usage };
  };
  const verify = (key: string) => supertest(svc.app).post("/verify").send({ key, path: `/domains/${acme.domains[0]}/calls` });

  beforeAll(async () => {
    time = fakeClock(START);
    svc = await startService(backend, { clock: time.clock });
    acme = await createTenant(svc, "acme");
    other = await createTenant(svc, "other");
    domainKeyId = ((await svc.as(acme.keys.domain).get("/keys/self")).body as { id: number }).id;
    await setPolicy(svc.ctx.db, `customer:${acme.id}`, { ratelimits: [{ name: "calls", limit: 5, windowSeconds: 60 }] }, time.now());
    await setPolicy(svc.ctx.db, `key:${domainKeyId}`, {
      ratelimits: [{ name: "burst", limit: 100, windowSeconds: 1 }],
      credits: { remaining: 3, refill: { amount: 3, interval: "daily" } },
    }, time.now());
  });
  afterAll(() => svc?.stop());

  it("shows every level's limits whole and the nearest balance before any use", async () => {
    await expect.poll(async () => (await usage(acme.keys.customer, `/keys/${domainKeyId}/usage`)).body.ratelimits?.length, { timeout: 2_000 }).toBe(2);
    const { status, body } = await usage(acme.keys.customer, `/keys/${domainKeyId}/usage`);
    expect(status).toBe(200);
    expect(body).toEqual({
      ratelimits: [
        { name: "calls", scope: "customer", limit: 5, windowSeconds: 60, remaining: 5, reset: 20 },
        { name: "burst", scope: "key", limit: 100, windowSeconds: 1, remaining: 100, reset: 1 },
      ],
      credits: { scope: "key", remaining: 3, nextRefillAt: "2026-11-24T00:00:00.000Z" },
    });
  });

  it("shows what is spent, and charges nothing itself", async () => {
    for (let i = 0; i < 3; i++) expect((await verify(acme.keys.domain)).body).toMatchObject({ code: "VALID" });
    expect((await verify(acme.keys.domain)).body).toMatchObject({ code: "USAGE_EXCEEDED" });
    const { body } = await usage(acme.keys.domain, "/keys/self/usage");
    // Three admitted: at most 2 of the customer's 5 are left (a process may hold a unit it has not spent).
    expect(body.ratelimits[0]!.remaining).toBeLessThanOrEqual(2);
    expect(body.credits).toEqual({ scope: "key", remaining: 0, nextRefillAt: "2026-11-24T00:00:00.000Z" });
    const again = await usage(acme.keys.domain, "/keys/self/usage");
    expect(again.body).toEqual(body);
  });

  it("is empty for a key nothing binds but its customer's limit", async () => {
    const { body } = await usage(acme.keys.otherDomain, "/keys/self/usage");
    expect(body).toEqual({ ratelimits: [expect.objectContaining({ name: "calls", scope: "customer" })], credits: null });
  });

  it("answers 404 for a key outside the caller's scope, as for any other", async () => {
    expect((await usage(other.keys.customer, `/keys/${domainKeyId}/usage`)).status).toBe(404);
    expect((await usage(acme.keys.otherDomain, `/keys/${domainKeyId}/usage`)).status).toBe(404);
  });
});
