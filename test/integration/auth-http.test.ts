import fc from "fast-check";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailable } from "../../src/domain/errors.ts";
import type { AuthGateway } from "../../src/http/verification/auth-gateway.ts";
import { AuthHandler, headerText } from "../../src/http/verification/auth-routes.ts";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import type { VerificationNeeds } from "../../src/services/verification/needs.ts";
import { KeyCache } from "../../src/services/verification/key-cache.ts";
import { Throttle } from "../../src/services/verification/throttle.ts";
import type { Queryable } from "../../src/store/database.ts";
import { backends } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// /auth, forward authentication for gateways (docs/gateways.md): the three gateways' conventions for
// the original request, each read alone (src/http/verification/auth-gateway.test.ts has their table), every answer and its headers, and the level rules on paths as the upstream sees them.
describe("headerText", () => {
  it.each([["acme", "acme"], ["Acme Corp.", "Acme Corp."], ["100%", "100%25"], ["Zürich", "Z%C3%BCrich"], ["a\nb", "a%0Ab"], ["日本", "%E6%97%A5%E6%9C%AC"]])("%j as %j", (name, text) => {
    expect(headerText(name)).toBe(text);
  });
});

describe.each(backends())("/auth on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let unchecked: ReturnType<typeof supertest>;
  /** /auth as keyplane answers it with KEYPLANE_AUTH_GATEWAY set to each gateway. */
  let gateway: Record<AuthGateway, ReturnType<typeof supertest>>;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    await createTenant(svc, "globex");
    // Odd methods and Envoy's deep paths are not in /openapi.json's templates: asked of the handler itself.
    const handled = (mode: AuthGateway) => supertest(new AuthHandler(svc.ctx, parseTrustedProxies(""), mode).inFrontOf((_req, res) => res.writeHead(404).end()));
    gateway = { nginx: handled("nginx"), traefik: handled("traefik"), envoy: handled("envoy") };
    unchecked = gateway.nginx;
  });
  afterAll(async () => svc?.stop());

  const nginx = (token: string | undefined, method: string, uri: string) => {
    const req = supertest(svc.app).get("/auth").set("X-Original-Method", method).set("X-Original-URI", uri);
    return token === undefined ? req : req.set("Authorization", `Bearer ${token}`);
  };
  const status = async (token: string, uri: string, method = "GET") => {
    const res = await nginx(token, method, uri);
    return res.status === 401 ? `401 ${res.headers["www-authenticate"]}` : String(res.status);
  };
  const INVALID = '401 Bearer realm="keyplane", error="invalid_token"';
  const SCOPE = '401 Bearer realm="keyplane", error="insufficient_scope"';

  it("lets a key through with its identity, empty body, and never the token", async () => {
    const res = await nginx(acme.keys.domain, "POST", "/domains/sip.acme.example/calls");
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
    const key = (await svc.as(acme.keys.domain).get("/keys/self")).body as { id: number; domainId: number };
    expect(res.headers).toMatchObject({
      "x-keyplane-key-id": String(key.id), "x-keyplane-key-type": "customer", "x-keyplane-level": "domain",
      "x-keyplane-customer-id": String(acme.id), "x-keyplane-customer": "acme",
      "x-keyplane-domain-id": String(acme.domainIds[0]), "x-keyplane-domain": "sip.acme.example",
    });
    for (const absent of ["application-id", "subscriber-id", "user-id"]) expect(res.headers).not.toHaveProperty(`x-keyplane-${absent}`);
    expect(JSON.stringify(res.headers)).not.toContain(acme.keys.domain);
    const logged = svc.logs.map((line) => JSON.parse(line) as { route?: string; key?: number; status?: number }).filter((l) => l.route === "/auth");
    expect(logged).toContainEqual(expect.objectContaining({ route: "/auth", key: key.id, status: 200 }));
    expect(svc.logs.join("\n")).not.toContain(acme.keys.domain);
  });

  it("echoes the request id on the answers made before express (/auth, POST /verify, GET /keys/self), 200 and 401 alike", async () => {
    const token = acme.keys.customer;
    const answers = await Promise.all([
      nginx(token, "GET", "/customers/acme/invoices").set("X-Request-Id", "gw-1"),
      nginx("XI00000000000000000000000000000000", "GET", "/").set("X-Request-Id", "gw-2"),
      supertest(svc.app).post("/verify").set("X-Request-Id", "gw-3").send({ key: token, path: "/customers/acme" }),
      supertest(svc.app).post("/verify").set("X-Request-Id", "gw-4").set("Content-Type", "application/json").send("{not json"),
      svc.as(token).get("/keys/self").set("X-Request-Id", "gw-5"),
      svc.as("XI00000000000000000000000000000000").get("/keys/self").set("X-Request-Id", "gw-6"),
    ]);
    expect(answers.map((res) => `${res.status} ${res.headers["x-request-id"]}`)).toEqual(["200 gw-1", "401 gw-2", "200 gw-3", "400 gw-4", "200 gw-5", "401 gw-6"]);
    const made = await nginx(token, "GET", "/customers/acme/invoices");
    expect(made.headers["x-request-id"]).toMatch(/^[0-9a-f]{16}-[0-9a-f]+$/);
  });

  it("names the application, subscriber and user of keys that have them", async () => {
    const app = await nginx(acme.keys.application, "GET", "/applications/self/calls");
    expect(app.headers).toMatchObject({ "x-keyplane-key-type": "application", "x-keyplane-level": "application", "x-keyplane-application-id": String(acme.application.id) });
    const sub = await nginx(acme.keys.subscriber, "GET", "/subscribers/self/voicemail");
    expect(sub.headers).toMatchObject({ "x-keyplane-key-type": "subscriber", "x-keyplane-subscriber-id": String(acme.subscriber.id) });
    const user = await nginx(acme.keys.customerUser, "GET", "/customers/acme/invoices");
    expect(user.headers).toMatchObject({ "x-keyplane-key-type": "user", "x-keyplane-level": "customer" });
    expect(user.headers["x-keyplane-user-id"]).toMatch(/^\d+$/);
    expect(user.headers).not.toHaveProperty("x-keyplane-domain-id");
  });

  it("answers 401 with the JSON body: invalid_token for malformed, unknown, disabled, deleted; insufficient_scope out of scope", async () => {
    const disabled = (await svc.as(acme.keys.customer).post("/keys", { name: "off" })).body as { id: number; keyId: string };
    await svc.as(acme.keys.customer).put(`/keys/${disabled.id}`, { active: false });
    const deleted = (await svc.as(acme.keys.customer).post("/keys", { name: "gone" })).body as { id: number; keyId: string };
    await svc.as(acme.keys.customer).delete(`/keys/${deleted.id}`);
    expect(await status("not-a-token", "/calls")).toBe(INVALID);
    expect(await status(`XI${"0".repeat(32)}`, "/calls")).toBe(INVALID);
    expect(await status(disabled.keyId, "/calls")).toBe(INVALID);
    expect(await status(deleted.keyId, "/calls")).toBe(INVALID);
    expect(await status(acme.keys.domain, "/customers/acme/invoices")).toBe(SCOPE);
    expect(await status(acme.keys.application, "/applications/ivr", "PUT")).toBe(SCOPE);
    const res = await nginx("not-a-token", "GET", "/calls");
    expect(res.body).toMatchObject({ status: 401, error: "unauthorized" });
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("answers a request without a token 401, with no error named (it is no failure)", async () => {
    const res = await nginx(undefined, "GET", "/calls");
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="keyplane"');
    expect(res.body).toMatchObject({ status: 401, error: "unauthorized" });
  });

  it("says EXPIRED keys are invalid_token from their expiry on", async () => {
    let now = new Date();
    const clocked = await startService(backend, { clock: () => now });
    try {
      const tenant = await createTenant(clocked, "initech");
      const key = (await clocked.as(tenant.keys.customer).post("/keys", { name: "short", expiresIn: 60 })).body as { keyId: string };
      const ask = () => supertest(clocked.app).get("/auth").set("Authorization", `Bearer ${key.keyId}`).set("X-Original-URI", "/calls");
      expect((await ask()).status).toBe(200);
      now = new Date(now.getTime() + 61_000);
      expect((await ask()).headers["www-authenticate"]).toBe('Bearer realm="keyplane", error="invalid_token"');
    } finally {
      await clocked.stop();
    }
  });

  it("reads the original request from Traefik's headers, and from the path for Envoy", async () => {
    const traefik = (method: string, uri: string) =>
      gateway.traefik.get("/auth").set("Authorization", `Bearer ${acme.keys.application}`).set("X-Forwarded-Method", method).set("X-Forwarded-Uri", uri);
    expect((await traefik("GET", "/applications/ivr")).status).toBe(200);
    expect((await traefik("PUT", "/applications/ivr")).status).toBe(401);
    const envoy = (method: string, path: string) => gateway.envoy[method as "get"](`/auth${path}`).set("Authorization", `Bearer ${acme.keys.application}`);
    expect((await envoy("get", "/applications/ivr")).status).toBe(200);
    expect((await envoy("head", "/applications/ivr")).status).toBe(200);
    expect((await envoy("put", "/applications/ivr")).status).toBe(401);
    expect((await envoy("patch", "/applications/ivr/calls")).status).toBe(200);
    expect((await envoy("options", "/applications/ivr/calls")).status).toBe(200);
    expect((await envoy("get", "/customers/acme/invoices")).status).toBe(401);
    expect((await gateway.envoy.post("/auth").set("Authorization", `Bearer ${acme.keys.customer}`)).status).toBe(200);
  });

  it("answers any method on /auth itself, HEAD without a body", async () => {
    for (const method of ["get", "post", "put", "delete", "patch", "options", "head"] as const) {
      const res = await unchecked[method]("/auth").set("Authorization", `Bearer ${acme.keys.customer}`).set("X-Original-URI", "/customers/acme/x");
      expect(`${method} ${res.status}`).toBe(`${method} 200`);
    }
    const refused = await unchecked.head("/auth").set("Authorization", "Bearer nope").set("X-Original-URI", "/x");
    expect(refused.status).toBe(401);
    expect(refused.text ?? "").toBe("");
  });

  it("ignores a token anywhere but the Authorization header", async () => {
    const res = await supertest(svc.app).get(`/auth?key=${acme.keys.customer}`).set("X-Api-Key", acme.keys.customer).set("X-Original-URI", `/calls?access_token=${acme.keys.customer}`);
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="keyplane"');
  });

  it("judges the path as the upstream sees it: decoded, dot segments removed, the query ignored", async () => {
    const k = acme.keys.customer;
    const cases: [string, string][] = [
      ["/customers/%61cme/invoices", "200"],
      ["/customers/globex/../acme/invoices", "200"],
      ["/customers/acme/../globex/invoices", SCOPE],
      ["/customers/acme/%2e%2e/globex/invoices", SCOPE],
      ["/customers/acme/%2E%2E/globex/invoices", SCOPE],
      ["/customers/acme%2Fglobex/invoices", SCOPE],
      ["/../customers/acme", SCOPE],
      ["/customers/acme/invoices/%zz", SCOPE], // a malformed escape anywhere: no judging it
      ["/customers/globex%zz/invoices", SCOPE],
      ["/customers/acme/invoices?tenant=globex", "200"],
      ["/customers/globex/invoices?tenant=acme", SCOPE],
      ["/customers/globex/invoices#/customers/acme", SCOPE],
      ["http://evil.example/customers/acme", SCOPE],
    ];
    for (const [uri, expected] of cases) expect(`${uri}: ${await status(k, uri)}`).toBe(`${uri}: ${expected}`);
  });

  it("never answers 500, and always the JSON body when it refuses, whatever the headers", async () => {
    const header = fc.oneof(fc.string(), fc.webPath(), fc.constant("/customers/acme/x"), fc.constant(".."));
    await fc.assert(
      fc.asyncProperty(
        fc.record({ authorization: fc.oneof(fc.string(), fc.constant(`Bearer ${acme.keys.customer}`), fc.constant("Bearer ")), uri: header, method: fc.string(), forwarded: header }, { requiredKeys: [] }),
        async (h) => {
          const req = unchecked.get("/auth");
          const set = (name: string, value: string | undefined) => {
            // Values a client library would refuse to send are no request a gateway could make.
            if (value !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(value)) req.set(name, value);
          };
          set("Authorization", h.authorization);
          set("X-Original-URI", h.uri);
          set("X-Original-Method", h.method);
          set("X-Forwarded-Uri", h.forwarded);
          const res = await req;
          expect(res.status).not.toBe(500);
          if (res.status !== 200) expect(JSON.parse(res.text)).toMatchObject({ status: res.status, error: expect.any(String), message: expect.any(String) });
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("/auth when the database cannot be reached", () => {
  it("answers 503 unavailable with the JSON body", async () => {
    const down = { query: () => Promise.reject(new StoreUnavailable("test")) } as unknown as Queryable;
    const logs: string[] = [];
    const ctx = { keyCache: new KeyCache(down), throttle: new Throttle({ failuresPerMinute: 60 }), clock: () => new Date(), log: captureLogger(logs) } as unknown as VerificationNeeds;
    const handler = new AuthHandler(ctx, parseTrustedProxies(""), "nginx");
    const res = await supertest(handler.inFrontOf((_req, res) => res.end())).get("/auth").set("Authorization", `Bearer XI${"A".repeat(32)}`).set("X-Original-URI", "/calls");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 503, error: "unavailable" });
  });
});
