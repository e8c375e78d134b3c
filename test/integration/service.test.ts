import { randomBytes } from "node:crypto";
import { DEFAULT_RETENTION, parseRetention } from "../../src/domain/analytics/retention.ts";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemResolver } from "../../src/services/webhooks/webhook-settings.ts";
import { createSealer } from "../../src/domain/seal.ts";
import { createApp } from "../../src/http/app.ts";
import { AuthHandler } from "../../src/http/verification/auth-routes.ts";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { listen } from "../../src/http/server.ts";
import { LastUse } from "../../src/services/verification/last-use.ts";
import { KeyCache } from "../../src/services/verification/key-cache.ts";
import { KeyInserts } from "../../src/services/keys/key-inserts.ts";
import { Throttle } from "../../src/services/verification/throttle.ts";
import { PolicyChains } from "../../src/services/policy/policy-chain.ts";
import { PolicyMeter, sqlCounters } from "../../src/services/policy/policy-meter.ts";
import { PathScopeCache } from "../../src/services/verification/path-scope-cache.ts";
import { GITHUB_KEYS_URL, GithubKeys } from "../../src/services/leaks/github-keys.ts";
import { DEFAULT_LEAK_SETTINGS } from "../../src/services/leaks/leaks.ts";
import { loadMigrations } from "../../src/store/migrate.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { createTenant } from "../support/world.ts";

// Health, the OpenAPI document, an unreachable database, and what the logs never hold.
describe("health and description", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService("pglite");
  });
  afterAll(() => svc.stop());

  it("answers /healthz and /readyz without authentication", async () => {
    expect((await supertest(svc.app).get("/healthz")).body).toEqual({ status: "ok" });
    expect((await supertest(svc.app).get("/readyz")).body).toEqual({ status: "ok" });
  });

  it("describes every route in OpenAPI 3.1, from the schemas that validate requests", async () => {
    const doc = (await supertest(svc.app).get("/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    const paths = Object.keys(doc.paths);
    for (const path of [
      "/keys", "/keys/self", "/keys/{keyId}", "/apikeys/{keyId}", "/customers/{customer}/keys", "/tenants/{customer}/apikeys/{keyId}",
      "/customers/{customer}/domains/{domain}/applications/{application}/keys", "/domains/{domain}/subscribers/{subscriber}/keys",
      "/applications/{application}/keys/{keyId}", "/subscribers/{subscriber}/keys", "/admin/customers/{customer}/users/{user}",
      "/admin/customers/{customer}/domains/{domain}/applications/{application}/invoke", "/healthz", "/readyz", "/openapi.json",
    ]) {
      expect(paths, path).toContain(path);
    }
    const post = doc.paths["/customers/{customer}/keys"].post;
    const body = post.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["name"]);
    expect(body.properties.name.maxLength).toBe(128);
    expect(post.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Key" });
    expect(doc.components.schemas.Key.properties.keyId.pattern).toBe("^XI[0-9A-F]{32}$");
    expect(post.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths["/admin/customers"].post.security).toEqual([{ adminToken: [] }]);
    const list = doc.paths["/domains/{domain}/keys"].get.parameters.map((p: { name?: string; $ref?: string }) => p.name ?? p.$ref);
    expect(list).toEqual(["#/components/parameters/domain", "limit", "after", "active", "type", "name"]);
  });

  it("answers 503 on /readyz and the API when the database is gone", async () => {
    const other = await startService("pglite");
    const key = (await other.admin.post("/admin/customers", { name: "acme" })).status;
    expect(key).toBe(201);
    await other.database.db.close();
    const ready = await supertest(other.app).get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: 503, error: "unavailable" });
    const res = await other.admin.get("/admin/customers");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 503, error: "unavailable" });
    await other.close();
  });
});

describe("a PostgreSQL server that cannot be reached", () => {
  it("gives 503 promptly, never a hang or a stack trace", { timeout: 20_000 }, async () => {
    const logs: string[] = [];
    const log = captureLogger(logs);
    const db = openPostgres({ connectionString: "postgres://keyplane@127.0.0.1:1/keyplane", log });
    const keyCache = new KeyCache(db);
    const ctx = { db, sealer: createSealer(randomBytes(32)), keyCache, keyInserts: new KeyInserts(db), lastUse: new LastUse(db, keyCache, log),
      throttle: new Throttle({ failuresPerMinute: 60 }), pathScopes: new PathScopeCache(), policies: new PolicyChains(db, log), meter: new PolicyMeter(sqlCounters(db), () => new Date(), log),
      clock: () => new Date(), log, migrations: await loadMigrations(),
      leaks: DEFAULT_LEAK_SETTINGS, githubKeys: new GithubKeys({ url: GITHUB_KEYS_URL, clock: () => new Date(), log }),
      webhooks: { allowHttp: false, allowPrivate: false, resolve: systemResolver } };
    const trustedProxies = parseTrustedProxies("");
    const app = createApp(ctx, { adminToken: "a".repeat(32), runtime: { header: "X-SVC-APIKey", timeoutMs: 10_000 }, version: "test", trustedProxies, auth: new AuthHandler(ctx, trustedProxies, "nginx"),
      analytics: { db, clock: () => new Date(), retention: parseRetention(DEFAULT_RETENTION) } });
    try {
      const started = Date.now();
      for (const req of [
        supertest(app).get("/keys/self").set("Authorization", `Bearer XI${"A".repeat(32)}`),
        supertest(app).get("/admin/customers").set("Authorization", `Bearer ${"a".repeat(32)}`),
        supertest(app).get("/readyz"),
      ]) {
        const res = await req;
        expect(res.status).toBe(503);
        expect(res.body).toMatchObject({ status: 503, error: "unavailable" });
        expect(res.text).not.toMatch(/ECONNREFUSED|at .*\.ts/);
      }
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await db.close();
    }
  });
});

describe("logs", () => {
  it("never hold a token or the admin token, whatever happened", { timeout: 60_000 }, async () => {
    const svc = await startService("pglite");
    try {
      const acme = await createTenant(svc, "acme");
      const tokens = Object.values(acme.keys);
      const root = svc.as(acme.keys.customer);
      // Tokens in paths, in bodies, in headers; failures of every kind; debug logging of every query.
      for (const t of tokens) {
        await svc.as(t).get("/keys/self");
        await root.get(`/keys/${t}`);
        await root.put(`/keys/${t}`, { name: t });
        await root.get(`/keys?name=${t}`);
      }
      await root.post("/keys", { name: acme.keys.domain });
      await root.post("/keys", { name: "x".repeat(200), token: acme.keys.domain });
      await svc.as(acme.keys.domain).get(`/no/such/route/${acme.keys.customer}`);
      await svc.as(svc.adminToken).get("/keys/self");
      await svc.as(svc.adminToken).get(`/admin/customers/${svc.adminToken}`);
      await svc.as(`XI${"F".repeat(32)}`).get("/keys/self");
      await svc.as(acme.keys.subscriber).post("/customers/acme/keys", { name: "denied" });
      const key = (await root.post("/keys", { name: "to-delete" })).body.keyId as string;
      tokens.push(key);
      await root.delete(`/keys/${key}`);
      await svc.admin.delete("/admin/customers/acme");

      const text = svc.logs.join("");
      expect(svc.logs.length).toBeGreaterThan(50);
      expect(text).toContain('"msg":"request"');
      expect(text).toContain('"msg":"query"');
      // Requests are logged by route pattern, never by path: a token in the path leaves no trace at all.
      expect(text).toContain('"route":"/keys/:keyId"');
      expect(text).toContain('"route":"unmatched"');
      for (const t of tokens) expect(text).not.toContain(t);
      expect(text).not.toMatch(/XI[0-9A-F]{32}/);
      expect(text).not.toContain(svc.adminToken);
    } finally {
      await svc.stop();
    }
  });
});

describe("requests Node refuses before any handler", () => {
  it("still get the JSON error body", async () => {
    const svc = await startService("pglite");
    const http = await listen(svc.app, 0, "127.0.0.1");
    try {
      const res = await fetch(`${http.url}/keys/${"x".repeat(20_000)}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ status: 400, error: "bad_request" });
    } finally {
      await http.close(100);
      await svc.stop();
    }
  });
});
