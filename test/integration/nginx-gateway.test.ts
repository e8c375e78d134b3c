import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import type { Listening } from "../../src/http/server.ts";
import { nginxMissing, startGateway, type Gateway, type Nginx, type Upstream } from "../support/nginx.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// A real nginx with the shipped configuration (deploy/nginx/keyplane.conf) in front of an upstream of
// the test's own, keyplane behind auth_request: what reaches the upstream, and what the client gets.
const missing = nginxMissing();

describe.skipIf(missing !== undefined)(`nginx auth_request in front of an API${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const LIMIT = 3;
  let svc: TestService;
  let keyplane: Listening;
  /** The headers of every request that reached keyplane from nginx. */
  const asked: IncomingHttpHeaders[] = [];
  let gateway: Gateway;
  let upstream: Upstream;
  let nginx: Nginx;
  let acme: Tenant;

  beforeAll(async () => {
    // nginx runs on this host, so its address is trusted: the client is what it puts in X-Forwarded-For.
    svc = await startService("pglite", { throttle: { failuresPerMinute: LIMIT, now: () => 0 }, trustedProxies: parseTrustedProxies("127.0.0.1") });
    acme = await createTenant(svc, "acme");
    await createTenant(svc, "globex");
    gateway = await startGateway((req, res) => (asked.push(req.headers), svc.app(req, res)));
    ({ keyplane, upstream, nginx } = gateway);
  });
  afterAll(async () => {
    await gateway?.stop();
    await svc?.stop();
  });

  /** A request through nginx, from `client` (each test its own, so that failures count apart). */
  const call = (client: string, path: string, token?: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    fetch(`${nginx.url}${path}`, { ...init, headers: { "X-Forwarded-For": client, ...(token && { Authorization: `Bearer ${token}` }), ...init.headers } });

  it("passes a good key to the upstream with its identity, replacing any the client made up", async () => {
    const before = upstream.seen.length;
    const res = await call("198.51.100.1", "/domains/sip.acme.example/calls?page=2", acme.keys.domain, { headers: { "X-Keyplane-Customer": "globex", "X-Keyplane-Application-Id": "1" } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("upstream");
    expect(upstream.seen.length).toBe(before + 1);
    const seen = upstream.seen.at(-1)!;
    expect(seen.url).toBe("/domains/sip.acme.example/calls?page=2");
    expect(seen.headers).toMatchObject({
      "x-keyplane-key-type": "customer", "x-keyplane-level": "domain", "x-keyplane-customer-id": String(acme.id), "x-keyplane-customer": "acme",
      "x-keyplane-domain-id": String(acme.domainIds[0]), "x-keyplane-domain": "sip.acme.example",
    });
    expect(seen.headers["x-keyplane-key-id"]).toMatch(/^\d+$/);
    expect(seen.headers).not.toHaveProperty("x-keyplane-application-id");
    const post = await call("198.51.100.1", "/customers/acme/invoices", acme.keys.customer, { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } });
    expect(post.status).toBe(200);
    expect(upstream.seen.at(-1)).toMatchObject({ method: "POST", headers: { "x-keyplane-level": "customer" } });
  });

  it("sets the original method and path itself: a client's own X-Original-* and X-Forwarded-Method/Uri never reach keyplane", async () => {
    const before = upstream.seen.length;
    // A domain key asks for its sibling domain, and names its own in every header a gateway might use.
    const own = "/domains/sip.acme.example/calls";
    const forged = { "X-Original-URI": own, "X-Original-Method": "GET", "X-Forwarded-Uri": own, "X-Forwarded-Method": "GET" };
    const res = await call("198.51.100.7", "/domains/media.acme.example/calls?x=1", acme.keys.domain, { method: "DELETE", headers: forged });
    expect(res.status).toBe(401);
    expect(upstream.seen.length).toBe(before);
    const seen = asked.at(-1)!;
    expect(seen).toMatchObject({ "x-original-uri": "/domains/media.acme.example/calls?x=1", "x-original-method": "DELETE" });
    expect(seen).not.toHaveProperty("x-forwarded-uri");
    expect(seen).not.toHaveProperty("x-forwarded-method");
    // And the key's own domain, asked plainly, passes: the refusal above was the path's, not the headers'.
    expect((await call("198.51.100.7", own, acme.keys.domain, { headers: forged })).status).toBe(200);
  });

  it("never lets a bad, disabled, deleted or out-of-scope key reach the upstream: 401 with the JSON body", async () => {
    const disabled = (await svc.as(acme.keys.customer).post("/keys", { name: "off" })).body as { id: number; keyId: string };
    await svc.as(acme.keys.customer).put(`/keys/${disabled.id}`, { active: false });
    const deleted = (await svc.as(acme.keys.customer).post("/keys", { name: "gone" })).body as { id: number; keyId: string };
    await svc.as(acme.keys.customer).delete(`/keys/${deleted.id}`);
    const before = upstream.seen.length;
    const cases: [string, string | undefined, string, string][] = [
      ["198.51.100.2", "not-a-token", "/calls", "invalid_token"],
      ["198.51.100.2", disabled.keyId, "/calls", "invalid_token"],
      ["198.51.100.2", deleted.keyId, "/calls", "invalid_token"],
      ["198.51.100.3", acme.keys.domain, "/customers/acme/invoices", "insufficient_scope"],
      ["198.51.100.3", acme.keys.customer, "/customers/globex/invoices", "insufficient_scope"],
      ["198.51.100.3", acme.keys.customer, "/customers/acme/%2e%2e/globex/invoices", "insufficient_scope"],
      ["198.51.100.3", undefined, "/calls", ""],
    ];
    for (const [client, token, path, error] of cases) {
      const res = await call(client, path, token);
      expect(`${path}: ${res.status}`).toBe(`${path}: 401`);
      expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="keyplane"${error && `, error="${error}"`}`);
      expect(await res.json()).toMatchObject({ status: 401, error: "unauthorized" });
    }
    expect(upstream.seen.length).toBe(before);
  });

  it("gives the client keyplane's 429 with its Retry-After, and the upstream nothing", async () => {
    for (let i = 0; i <= LIMIT; i++) expect((await call("198.51.100.4", "/calls", `XI${String(i).padStart(32, "0")}`)).status).toBe(401);
    const before = upstream.seen.length;
    const res = await call("198.51.100.4", "/calls", `XI${"F".repeat(32)}`);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(await res.json()).toMatchObject({ status: 429, error: "rate_limited" });
    expect(upstream.seen.length).toBe(before);
    expect((await call("198.51.100.5", "/calls", acme.keys.customer)).status).toBe(200); // another client
  });

  it("keeps its connections to keyplane and to the upstream open between bursts of requests", async () => {
    // Bursts of 100 requests at once, each burst held at the upstream until all of it has arrived: a
    // worker that kept fewer idle connections than that would close the rest after each burst and open
    // them again for the next (nginx's keepalive in the shipped configuration).
    const BURST = 100;
    let accepted = 0;
    keyplane.server.on("connection", () => accepted++);
    const before = upstream.connections();
    upstream.holdUntil(BURST);
    try {
      for (let burst = 0; burst < 5; burst++) {
        const statuses = await Promise.all(Array.from({ length: BURST }, () => call("198.51.100.7", "/calls", acme.keys.customer).then((res) => res.status)));
        expect(statuses).toEqual(Array(BURST).fill(200));
      }
    } finally {
      upstream.holdUntil(0);
    }
    expect(upstream.connections() - before).toBeLessThanOrEqual(BURST);
    expect(accepted).toBeLessThanOrEqual(BURST);
  });

  it("answers 503 with the JSON body, and passes nothing on, when keyplane cannot be reached", async () => {
    await keyplane.close(0);
    const before = upstream.seen.length;
    const res = await call("198.51.100.6", "/calls", acme.keys.customer);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 503, error: "unavailable" });
    expect(upstream.seen.length).toBe(before);
  });
});
