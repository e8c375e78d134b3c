import fc from "fast-check";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { usableKey } from "../../src/services/verification/authenticate.ts";
import { Throttled } from "../../src/services/verification/throttle.ts";
import { backends, openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Failed-authentication throttling (docs/gateways.md, "Throttling") on every endpoint that takes a
// key: REST (express and the /keys/self fast path), POST /verify and /auth. Limit 3 a minute here,
// on a clock the test moves; every statement the database receives is counted.
const LIMIT = 3;
let unknown = 0;
const unknownToken = () => `XI${(++unknown).toString(16).toUpperCase().padStart(32, "0")}`;

describe.each(backends())("throttling on %s", (backend) => {
  let svc: TestService;
  let database: TestDatabase;
  let acme: Tenant;
  let ms = 0;
  let statements = 0;

  beforeAll(async () => {
    database = await openTestDatabase(backend, captureLogger([]));
    const query = database.db.query.bind(database.db);
    database.db.query = ((text: string, params?: readonly unknown[]) => (statements++, query(text, params))) as typeof query;
    svc = await startService(backend, {
      database,
      throttle: { failuresPerMinute: LIMIT, now: () => ms },
      trustedProxies: parseTrustedProxies("127.0.0.1, ::1"),
    });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => svc?.stop());

  /** Requests from `client`, as the trusted proxy in front (the test's own address) forwards them. */
  const from = (client: string) => {
    const agent = supertest(svc.app);
    return {
      self: (token: string) => agent.get("/keys/self").set("X-Forwarded-For", client).set("Authorization", `Bearer ${token}`),
      keys: (token: string) => agent.get("/customers/acme/keys").set("X-Forwarded-For", client).set("Authorization", `Bearer ${token}`),
      verify: (token: string) => agent.post("/verify").set("X-Forwarded-For", client).send({ key: token, path: "/customers/acme/x" }),
      auth: (token: string) => agent.get("/auth").set("X-Forwarded-For", client).set("X-Original-URI", "/customers/acme/x").set("Authorization", `Bearer ${token}`),
    };
  };
  const failTimes = async (client: string, n: number) => {
    for (let i = 0; i < n; i++) expect((await from(client).self(unknownToken())).status).toBe(401);
  };

  it("answers a client over the limit 429 with Retry-After on every endpoint, without a database query", async () => {
    const c = from("198.51.100.1");
    await failTimes("198.51.100.1", LIMIT);
    expect((await c.verify(unknownToken())).body).toEqual({ valid: false, code: "UNKNOWN" }); // the fourth failure
    const before = statements;
    for (const res of [await c.self(unknownToken()), await c.keys(unknownToken()), await c.verify(unknownToken()), await c.auth(unknownToken()), await c.self("garbage")]) {
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ status: 429, error: "rate_limited" });
      expect(Number(res.headers["retry-after"])).toBe(60);
    }
    expect(statements).toBe(before);
    expect((await from("198.51.100.2").self(acme.keys.customer)).status).toBe(200); // another client
  });

  it("still answers a throttled client's key the process knows valid, and only that", async () => {
    const c = from("198.51.100.3");
    expect((await c.self(acme.keys.customer)).status).toBe(200); // now cached
    await failTimes("198.51.100.3", LIMIT + 1);
    const before = svc.ctx.keyCache.stats().queries;
    expect((await c.self(acme.keys.customer)).status).toBe(200);
    expect((await c.auth(acme.keys.customer)).status).toBe(200);
    expect((await c.verify(acme.keys.customer)).body).toMatchObject({ valid: true, code: "VALID" });
    expect(svc.ctx.keyCache.stats().queries).toBe(before); // the key from the cache (the path's customer is looked up)
    // A key this process made counts as seen valid (it wrote it: docs/api.md): once its cache is
    // emptied, the domain key is valid but not seen.
    expect((await c.self(acme.keys.domain)).status).toBe(200);
    svc.ctx.keyCache.clear();
    expect((await c.auth(acme.keys.domain)).status).toBe(429);
  });

  it("lets Retry-After fall as failures age out of the minute, then lets the client go", async () => {
    const client = "198.51.100.4";
    await failTimes(client, 1);
    ms += 20_000;
    await failTimes(client, LIMIT);
    expect((await from(client).self(unknownToken())).headers["retry-after"]).toBe("40");
    ms += 30_000;
    expect((await from(client).self(unknownToken())).headers["retry-after"]).toBe("10");
    ms += 10_000;
    expect((await from(client).self(unknownToken())).status).toBe(401); // back under: a failure again, not 429
  });

  it("counts neither a missing Authorization header nor a key out of scope as a failure", async () => {
    const c = from("198.51.100.5");
    for (let i = 0; i < LIMIT * 3; i++) {
      expect((await supertest(svc.app).get("/keys/self").set("X-Forwarded-For", "198.51.100.5")).status).toBe(401);
      expect((await supertest(svc.app).get("/auth").set("X-Forwarded-For", "198.51.100.5")).status).toBe(401);
      expect((await c.auth(acme.keys.subscriber)).status).toBe(401); // insufficient_scope
    }
    expect((await c.self(unknownToken())).status).toBe(401);
  });

  it("counts an IPv6 client by its /64: a failure from each of its addresses throttles the next, and another /64 is untouched", async () => {
    expect((await from("2001:4860:7:1:ffff::1").self(acme.keys.customer)).status).toBe(200); // now seen valid
    for (let i = 1; i <= LIMIT + 1; i++) await failTimes(`2001:4860:7:1:${i}::${i}`, 1);
    for (const res of [await from("2001:4860:7:1:ffff::1").self(unknownToken()), await from("2001:4860:7:1::").verify(unknownToken())]) {
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ error: "rate_limited" });
    }
    expect((await from("2001:4860:7:2::1").self(unknownToken())).status).toBe(401);
    expect((await from("2001:4860:7:1:ffff::1").self(acme.keys.customer)).status).toBe(200); // still answered: a key it knows valid
  });

  it("believes X-Forwarded-For only from a trusted proxy", async () => {
    const untrusted = await startService(backend, { throttle: { failuresPerMinute: LIMIT, now: () => ms } });
    try {
      // Each request claims another client, but the peer is not trusted: all count against it.
      for (let i = 0; i <= LIMIT; i++) {
        await supertest(untrusted.app).get("/keys/self").set("X-Forwarded-For", `203.0.113.${i}`).set("Authorization", `Bearer ${unknownToken()}`);
      }
      const res = await supertest(untrusted.app).get("/keys/self").set("X-Forwarded-For", "203.0.113.200").set("Authorization", `Bearer ${unknownToken()}`);
      expect(res.status).toBe(429);
    } finally {
      await untrusted.stop();
    }
    // Trusted: the forwarded address is the client, so a second one is not throttled by the first's failures.
    await failTimes("198.51.100.6", LIMIT + 1);
    expect((await from("198.51.100.6").self(unknownToken())).status).toBe(429);
    expect((await from("198.51.100.7").self(unknownToken())).status).toBe(401);
    // The client's own addition on the left changes nothing: the right-most untrusted address is the client.
    expect((await from("198.51.100.7, 198.51.100.6").self(unknownToken())).status).toBe(429);
  });

  it("remembers a bounded number of clients under a flood of 100,000 addresses", async () => {
    for (let i = 0; i < 100_000; i++) {
      try {
        await usableKey(svc.ctx, "verify", `2001:db8::${i.toString(16)}:${(i >> 16).toString(16)}`, "not-a-token");
      } catch (error) {
        if (!(error instanceof Throttled)) throw error;
      }
    }
    expect(svc.ctx.throttle.size).toBeLessThanOrEqual(10_000);
  });

  it("never answers 500 to a throttled client, always the JSON body, whatever it sends", async () => {
    await failTimes("198.51.100.9", LIMIT + 1);
    const c = from("198.51.100.9");
    const token = fc.oneof(fc.string(), fc.constant(acme.keys.customer), fc.constant(unknownToken()), fc.string({ minLength: 34, maxLength: 34 }).map((t) => `XI${t.slice(2)}`));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("self", "keys", "verify", "auth" as const), token, async (endpoint, t) => {
        // Header values a client library would refuse to send are no request anyone could make.
        if (endpoint !== "verify" && !/^[\x21-\x7e]+$/.test(t)) return;
        const res = await c[endpoint](t);
        expect([200, 400, 401, 429]).toContain(res.status);
        if (res.status !== 200) expect(JSON.parse(res.text)).toMatchObject({ status: res.status, error: expect.any(String) });
        if (res.status === 429) expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      }),
      { numRuns: 120 },
    );
  });
});
