import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Policy } from "../../src/domain/policy/policy.ts";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { nginxMissing, startGateway, type Gateway } from "../support/nginx.ts";
import { setPolicy } from "../support/policy.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Key policy through a real nginx with the shipped configuration (deploy/nginx/keyplane.conf): what a
// client of the API gets when keyplane refuses its key's request for a restriction (403), a rate limit
// or its credits (429, Retry-After, the RateLimit fields), and what it learns of its limits on a 200.
const missing = nginxMissing();

describe.skipIf(missing !== undefined)(`key policy through nginx auth_request${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let svc: TestService;
  let gateway: Gateway;
  let acme: Tenant;

  beforeAll(async () => {
    svc = await startService("pglite", { trustedProxies: parseTrustedProxies("127.0.0.1") });
    acme = await createTenant(svc, "acme");
    gateway = await startGateway(svc.app);
  });
  afterAll(async () => {
    await gateway?.stop();
    await svc?.stop();
  });

  const call = (token: string, client = "203.0.113.7") => fetch(`${gateway.nginx.url}/calls`, { headers: { "X-Forwarded-For": client, Authorization: `Bearer ${token}` } });
  /** Sets a key's policy and waits until keyplane answers by it. */
  const bind = async (token: string, policy: Policy, seen: (v: Record<string, unknown>) => boolean, probe: object = { path: "/customers/no-such-customer" }) => {
    const id = ((await svc.as(token).get("/keys/self")).body as { id: number }).id;
    await setPolicy(svc.ctx.db, `key:${id}`, policy);
    const deadline = Date.now() + 1_000;
    // Asked on a path the key may not reach, which charges nothing, until keyplane shows the policy.
    while (!seen((await svc.as(token).post("/verify", { key: token, ...probe })).body as Record<string, unknown>)) {
      if (Date.now() > deadline) throw new Error("the policy was not seen");
    }
  };

  it("gives the client the RateLimit fields on a 200, then keyplane's 429 with Retry-After, and the upstream nothing", async () => {
    const key = acme.keys.domain;
    await bind(key, { ratelimits: [{ name: "calls", limit: 2, windowSeconds: 86_400 }] }, (v) => v.ratelimits !== undefined);
    const first = await call(key);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"calls";q=2;w=86400');
    expect(first.headers.get("ratelimit")).toMatch(/^"calls";r=1;t=\d+$/);
    expect((await call(key)).headers.get("ratelimit")).toMatch(/^"calls";r=0;t=\d+$/);
    const before = gateway.upstream.seen.length;
    const refused = await call(key);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ status: 429, error: "rate_limited" });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(refused.headers.get("ratelimit")).toBe(`"calls";r=0;t=${retryAfter}`);
    expect(refused.headers.get("ratelimit-policy")).toBe('"calls";q=2;w=86400');
    expect(gateway.upstream.seen.length).toBe(before);
  });

  it("gives the client keyplane's 429 usage_exceeded once the credits are spent, with what is left", async () => {
    const key = acme.keys.application;
    await bind(key, { credits: { remaining: 1 } }, (v) => v.credits !== undefined);
    const spent = await call(key);
    expect([spent.status, spent.headers.get("x-keyplane-credits-remaining")]).toEqual([200, "0"]);
    const refused = await call(key);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ status: 429, error: "usage_exceeded" });
    expect(refused.headers.get("x-keyplane-credits-remaining")).toBe("0");
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(refused.headers.get("ratelimit")).toBeNull();
  });

  it("gives the client keyplane's 403 for a key its policy restricts to other addresses, judged on the client behind nginx", async () => {
    const key = acme.keys.subscriber;
    await bind(key, { restrictions: { ips: ["203.0.113.0/24"] } }, (v) => v.code === "RESTRICTED", { ip: "198.51.100.9" });
    expect((await call(key, "203.0.113.9")).status).toBe(200);
    const before = gateway.upstream.seen.length;
    const refused = await call(key, "198.51.100.9");
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ status: 403, error: "forbidden" });
    expect(gateway.upstream.seen.length).toBe(before);
  });

  it("sends no RateLimit fields or credits for a key without a policy", async () => {
    const res = await call(acme.keys.customer);
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit")).toBeNull();
    expect(res.headers.get("x-keyplane-credits-remaining")).toBeNull();
  });
});
