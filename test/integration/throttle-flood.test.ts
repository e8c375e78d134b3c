import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// A flood of unknown tokens from the address a valid key is used from (docs/gateways.md,
// "Throttling"): at the default limit, for three minutes on one clock that the throttle, the key
// cache (30 s fresh, 300 s stale window) and expiry share, so nothing waits in real time.
const TTL_MS = 30_000;
const STALE_MS = 300_000;
let unknown = 0;
const unknownToken = () => `XI${(++unknown).toString(16).toUpperCase().padStart(32, "0")}`;

type Endpoint = "self" | "keys" | "verify" | "auth";
const ENDPOINTS: Endpoint[] = ["self", "keys", "verify", "auth"];

describe.each(backends())("a flood from a key's own address on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  const clock = fakeClock();
  const now = () => clock.now().getTime();

  beforeAll(async () => {
    svc = await startService(backend, {
      clock: clock.clock,
      keyCache: { ttlMs: TTL_MS, staleMs: STALE_MS, now },
      throttle: { failuresPerMinute: 60, now },
      trustedProxies: parseTrustedProxies("127.0.0.1, ::1"),
    });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => svc?.stop());

  /** A request to `endpoint` with `token`, from `client`, as the trusted proxy in front forwards it. */
  const send = (client: string, endpoint: Endpoint, token: string) => {
    const agent = supertest(svc.app);
    const path = "/customers/acme/x";
    if (endpoint === "verify") return agent.post("/verify").set("X-Forwarded-For", client).send({ key: token, path });
    const url = endpoint === "self" ? "/keys/self" : endpoint === "keys" ? "/customers/acme/keys" : "/auth";
    return agent.get(url).set("X-Forwarded-For", client).set("X-Original-URI", path).set("Authorization", `Bearer ${token}`);
  };
  /** What `endpoint` answered: the status, and for POST /verify the verdict's code too. */
  const outcome = async (client: string, endpoint: Endpoint, token: string) => {
    const res = await send(client, endpoint, token);
    return endpoint === "verify" && res.status === 200 ? `200 ${(res.body as { code: string }).code}` : String(res.status);
  };
  const answered = (endpoint: Endpoint) => (endpoint === "verify" ? "200 VALID" : "200");
  const throttle = async (client: string) => {
    for (let i = 0; i <= 60; i++) await send(client, ENDPOINTS[i % 4]!, unknownToken());
    expect(svc.ctx.throttle.retryAfter(client)).toBeDefined();
  };
  const newKey = async (name: string) => (await svc.as(acme.keys.customer).post("/customers/acme/keys", { name })).body as { id: number; keyId: string };
  const expect429 = async (client: string, token: string) => {
    for (const endpoint of ENDPOINTS) {
      const res = await send(client, endpoint, token);
      expect(res.status, endpoint).toBe(429);
      expect(res.body).toMatchObject({ status: 429, error: "rate_limited" });
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers["retry-after"])).toBeLessThanOrEqual(60);
    }
  };

  it("answers a key seen valid on every endpoint through three minutes of unknown tokens, past its cache entry's refresh", async () => {
    const client = "198.51.100.20";
    const key = acme.keys.customer;
    for (const endpoint of ENDPOINTS) expect(await outcome(client, endpoint, key)).toBe(answered(endpoint));
    const refused: string[] = [];
    let throttledProbes = 0;
    let sent = 0;
    const start = now();
    // 5 unknown tokens a second (300 a minute, five times the limit), a probe on every endpoint every 5 s.
    while (now() - start < 180_000) {
      for (let i = 0; i < 5; i++) await send(client, ENDPOINTS[sent++ % 4]!, unknownToken());
      if ((now() - start) % 5_000 === 0) {
        if (svc.ctx.throttle.retryAfter(client) !== undefined) throttledProbes++;
        for (const endpoint of ENDPOINTS) {
          const got = await outcome(client, endpoint, key);
          if (got !== answered(endpoint)) refused.push(`${(now() - start) / 1000} s, ${endpoint}: ${got}`);
        }
      }
      clock.advance(1_000);
    }
    expect(refused).toEqual([]);
    // Most probes came while the client was throttled (a 429 is no failure, so it is let go for a
    // while each minute, until its next 61 failures).
    expect(throttledProbes).toBeGreaterThan(18);
    // A valid key this process has not seen from anyone is refused all the same: no oracle. (It made
    // the key, which counts as seen valid, docs/api.md: its cache emptied, it has not seen it since.)
    svc.ctx.keyCache.clear();
    await throttle(client);
    await expect429(client, acme.keys.otherDomain);
  });

  it("never answers a seen key once it is disabled or deleted, throttled or not", async () => {
    const client = "198.51.100.21";
    const disabled = await newKey("to-disable");
    const deleted = await newKey("to-delete");
    for (const k of [disabled, deleted]) expect((await send(client, "self", k.keyId)).status).toBe(200);
    await throttle(client);
    expect((await svc.as(acme.keys.customer).put(`/keys/${disabled.id}`, { active: false })).status).toBe(200);
    expect((await svc.as(acme.keys.customer).delete(`/keys/${deleted.id}`)).status).toBe(204);
    for (const k of [disabled, deleted]) {
      for (const endpoint of ENDPOINTS) expect(["401", "200 DISABLED", "200 UNKNOWN", "429"], endpoint).toContain(await outcome(client, endpoint, k.keyId));
      clock.advance(TTL_MS); // past the entry's refresh too
      for (const endpoint of ENDPOINTS) expect(["401", "200 DISABLED", "200 UNKNOWN", "429"], endpoint).toContain(await outcome(client, endpoint, k.keyId));
    }
    expect((await send("198.51.100.22", "self", disabled.keyId)).status).toBe(401); // not throttled: plainly refused
  });

  it("refuses a throttled client a key seen valid longer ago than the stale window", async () => {
    const client = "198.51.100.23";
    const old = await newKey("seen-long-ago");
    expect((await send(client, "self", old.keyId)).status).toBe(200);
    clock.advance(STALE_MS + 1_000);
    await throttle(client);
    await expect429(client, old.keyId);
    const queries = svc.ctx.keyCache.stats().queries;
    await expect429(client, old.keyId);
    expect(svc.ctx.keyCache.stats().queries).toBe(queries); // refused without a database query
  });
});
