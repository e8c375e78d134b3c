import fc from "fast-check";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen } from "../../src/http/server.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// POST /verify (docs/api.md, "Verification"): every verdict code, the level rules on platform paths
// as the upstream would see them, and bad bodies.
describe.each(backends())("POST /verify on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
  });
  afterAll(async () => svc?.stop());

  const verify = (body: unknown) => svc.as("ignored").post("/verify").set("Authorization", "").send(body as object);
  const code = async (key: string, path?: string, method?: string) => {
    const res = await verify({ key, ...(path !== undefined && { path }), ...(method && { method }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.code as string;
  };

  it("says VALID with the key (no keyId) and its level, for a usable key and no path", async () => {
    const res = await verify({ key: acme.keys.domain });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ valid: true, code: "VALID", key: { level: "domain", type: "customer", tenant: { name: "acme" }, domain: { domain: "sip.acme.example" } } });
    expect(res.body.key).not.toHaveProperty("keyId");
    expect(JSON.stringify(res.body)).not.toContain(acme.keys.domain);
  });

  it("refuses a path naming a deleted domain at once, on the process that deleted it", async () => {
    const shortLived = await createTenant(svc, "shortlived");
    const path = "/customers/shortlived/domains/sip.shortlived.example/calls";
    expect(await code(shortLived.keys.customer, path)).toBe("VALID");
    expect((await svc.admin.delete("/admin/customers/shortlived/domains/sip.shortlived.example")).status).toBe(204);
    expect(await code(shortLived.keys.customer, path)).toBe("FORBIDDEN");
    expect(await code(shortLived.keys.customer, "/customers/shortlived/calls")).toBe("VALID");
  });

  it("gives each code: MALFORMED, UNKNOWN, DISABLED", async () => {
    expect(await code("not-a-token")).toBe("MALFORMED");
    expect(await code(acme.keys.customer.toLowerCase())).toBe("MALFORMED");
    expect(await code(`XI${"0".repeat(32)}`)).toBe("UNKNOWN");
    const key = (await svc.as(acme.keys.customer).post("/keys", { name: "soon-disabled" })).body as { id: number; keyId: string };
    await svc.as(acme.keys.customer).put(`/keys/${key.id}`, { active: false });
    const res = await verify({ key: key.keyId });
    expect(res.body).toEqual({ valid: false, code: "DISABLED" });
  });

  it("says EXPIRED from the key's expiry on, with no sweep needed", async () => {
    let now = new Date();
    const clocked = await startService(backend, { clock: () => now });
    try {
      const tenant = await createTenant(clocked, "initech");
      const key = (await clocked.as(tenant.keys.customer).post("/keys", { name: "short-lived", expiresIn: 60 })).body as { keyId: string };
      const verdict = async () => (await clocked.as("ignored").post("/verify").send({ key: key.keyId })).body;
      expect(await verdict()).toMatchObject({ valid: true, code: "VALID" });
      now = new Date(now.getTime() + 61_000);
      expect(await verdict()).toEqual({ valid: false, code: "EXPIRED" });
    } finally {
      await clocked.stop();
    }
  });

  it("judges paths by the level rules: customer, domain, application and subscriber paths, and none", async () => {
    const k = acme.keys;
    const cases: [string, string, string, string][] = [
      [k.customer, "/customers/acme/invoices", "GET", "VALID"],
      [k.customer, "/tenants/acme/domains/sip.acme.example/calls", "POST", "VALID"],
      [k.customer, "/customers/globex/invoices", "GET", "FORBIDDEN"],
      [k.domain, "/customers/acme/invoices", "GET", "FORBIDDEN"],
      [k.domain, "/domains/sip.acme.example/calls", "DELETE", "VALID"],
      [k.domain, "/domains/media.acme.example/calls", "GET", "FORBIDDEN"],
      [k.domain, "/domains/self/applications/ivr/calls", "PUT", "VALID"],
      [k.application, "/applications/ivr", "GET", "VALID"],
      [k.application, "/applications/ivr/", "HEAD", "VALID"],
      [k.application, "/applications/ivr", "PUT", "FORBIDDEN"],
      [k.application, "/applications/ivr/.", "PUT", "FORBIDDEN"],
      [k.application, "/applications/self/calls", "PUT", "VALID"],
      [k.application, "/subscribers/12125550100/voicemail", "GET", "FORBIDDEN"],
      [k.subscriber, "/subscribers/self/voicemail", "GET", "VALID"],
      [k.subscriber, "/domains/sip.acme.example/calls", "GET", "FORBIDDEN"],
      [k.customerUser, "/customers/acme/invoices", "GET", "VALID"],
      [k.domainUser, "/customers/acme/invoices", "GET", "FORBIDDEN"],
      [k.domainUser, "/domains/sip.acme.example/subscribers/12125550100/calls", "GET", "VALID"],
      [k.subscriber, "/calls", "POST", "VALID"], // no scope prefix: the caller's own
      [k.customer, "/customers/initech/invoices", "GET", "FORBIDDEN"], // unknown customer
    ];
    for (const [key, path, method, expected] of cases) expect(`${method} ${path}: ${await code(key, path, method)}`).toBe(`${method} ${path}: ${expected}`);
  });

  it("judges a path as the upstream sees it: decoded, dot segments removed, never let through by a spelling", async () => {
    const k = acme.keys.customer;
    expect(await code(k, "/customers/%61cme/invoices")).toBe("VALID");
    expect(await code(k, "/customers/globex/../acme/invoices")).toBe("VALID");
    expect(await code(k, "/customers/acme/../globex/invoices")).toBe("FORBIDDEN");
    expect(await code(k, "/customers/acme/%2e%2e/globex/invoices")).toBe("FORBIDDEN");
    expect(await code(k, "/customers/acme%2Fglobex/invoices")).toBe("FORBIDDEN");
    expect(await code(k, "/../customers/acme")).toBe("FORBIDDEN");
    expect(await code(k, "/customers/acme/invoices?tenant=globex")).toBe("VALID");
    expect(await code(globex.keys.customer, "/customers/acme/invoices")).toBe("FORBIDDEN");
    expect(await code(acme.keys.application, "/applications/ivr/x/..", "PUT")).toBe("FORBIDDEN");
  });

  it("ignores a token in a header: the body's is the one judged", async () => {
    const res = await svc.as(acme.keys.customer).post("/verify").send({ key: "nothing" });
    expect(res.body).toEqual({ valid: false, code: "MALFORMED" });
  });

  it("answers 400 with the JSON body for a body not of the shape", async () => {
    for (const body of [[], { path: "/x" }, { key: 7 }, { key: acme.keys.customer, path: "" }, { key: acme.keys.customer, path: "http://x/y" },
      { key: acme.keys.customer, method: "G T" }]) {
      const res = await verify(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ status: 400, error: "bad_request" });
    }
  });

  it("never answers 500, whatever the body", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue(), fc.record({ key: fc.oneof(fc.string(), fc.constant(acme.keys.domain)), path: fc.oneof(fc.webPath(), fc.string()), method: fc.string() }, { requiredKeys: [] })),
        async (body) => {
          const res = await svc.as("ignored").post("/verify").set("Content-Type", "application/json").send(JSON.stringify(body) ?? "null");
          expect([200, 400, 413, 415]).toContain(res.status);
          expect(res.headers["content-type"]).toMatch(/^application\/json/);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("answers alike whether its fast path or express takes the request (a chunked body, a charset, bad JSON, a bad shape)", async () => {
    const server = await listen(svc.app, 0, "127.0.0.1");
    /** Posts `body`; split: in two writes a moment apart, cut inside its first multi-byte character. */
    const post = (body: string, headers: Record<string, string>, split = false) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${server.url}/verify`, { method: "POST", headers }, (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => (text += chunk.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on("error", reject);
        if (!split) return req.end(body);
        const bytes = Buffer.from(body);
        const cut = Buffer.from(body.slice(0, body.search(/[\u0080-\uffff]/))).length + 1;
        req.write(bytes.subarray(0, cut));
        setTimeout(() => req.end(bytes.subarray(cut)), 30);
      });
    try {
      for (const body of [JSON.stringify({ key: acme.keys.domain, path: "/domains/sip.acme.example/x" }), "{nope", JSON.stringify({ key: 7 })]) {
        const plain = await post(body, { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(body)) });
        const chunked = await post(body, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
        const charset = await post(body, { "Content-Type": "application/json; charset=UTF-8", "Content-Length": String(Buffer.byteLength(body)) });
        expect(chunked).toEqual(plain);
        expect(charset).toEqual(plain);
      }
      // A declared length that comes in pieces: answered once all of it has, the pieces joined before decoding.
      const accented = JSON.stringify({ key: acme.keys.domain, path: "/domains/sip.acme.example/café" });
      const headers = { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(accented)) };
      const whole = await post(accented, headers);
      expect(JSON.parse(whole.body)).toMatchObject({ valid: true, code: "VALID" });
      expect(await post(accented, headers, true)).toEqual(whole);
    } finally {
      await server.close(0);
    }
  });
});
