import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Referrer patterns (docs/api.md, "Key policy"), matched part by part: the scheme exactly; the host by
// labels, `*` standing for one or more whole labels; the port (the scheme's default when none is
// written); then the path, where `*` is any run. The referrer's query and fragment take no part; one
// with user information, or that is no absolute http(s) URL, never matches. On POST /verify (the body's
// `referrer`), /auth (the original request's Referer) and the key paths (the request's own Referer).

const PATTERN = "https://*.partner.example/*";

const CASES: [string, string, boolean][] = [
  // The reported spellings: the pattern's text anywhere but in the host.
  ["the text in the path", "https://evil.example/.partner.example/", false],
  ["the text in the query", "https://evil.example/?.partner.example/x", false],
  ["the text in the fragment", "https://evil.example#.partner.example/", false],
  // Their neighbours.
  ["a partner's page", "https://a.partner.example/x", true],
  ["a partner's deeper host", "https://a.b.partner.example/x?y=1#z", true],
  ["a partner's root, no path written", "https://a.partner.example", true],
  ["the default port written", "https://a.partner.example:443/x", true],
  ["the host in capitals", "https://A.Partner.Example/x", true],
  ["the domain alone", "https://partner.example/", false],
  ["a host ending in the domain's text", "https://evilpartner.example/", false],
  ["the domain before another", "https://a.partner.example.evil.example/", false],
  ["the domain as user information", "https://a.partner.example@evil.example/", false],
  ["user information before a partner", "https://x@a.partner.example/", false],
  ["another port", "https://a.partner.example:8443/x", false],
  ["http", "http://a.partner.example/x", false],
  ["no scheme", "a.partner.example/x", false],
  ["scheme-relative", "//a.partner.example/x", false],
  ["another scheme", "ftp://a.partner.example/x", false],
  ["no URL at all", "partner", false],
];

describe.each(backends())("referrer patterns on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let key: string;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    const res = await svc.as(acme.keys.customer).post("/customers/acme/keys", { name: "partner pages", policy: { restrictions: { referrers: [PATTERN] } } });
    expect(res.status, res.text).toBe(200);
    key = (res.body as { keyId: string }).keyId;
  });
  afterAll(() => svc?.stop());

  it.each(CASES)("%s: %s", async (_name, referrer, passes) => {
    const verdict = (await supertest(svc.app).post("/verify").send({ key, referrer, path: "/customers/acme/calls" })).body as { code: string; reason?: string };
    expect(verdict).toMatchObject(passes ? { code: "VALID" } : { code: "RESTRICTED", reason: "referrer" });
    const viaAuth = await supertest(svc.app)
      .get("/auth")
      .set("Authorization", `Bearer ${key}`)
      .set("X-Original-Method", "GET")
      .set("X-Original-URI", "/customers/acme/calls")
      .set("Referer", referrer);
    expect(viaAuth.status).toBe(passes ? 200 : 403);
    const own = await supertest(svc.app).get("/keys/self").set("Authorization", `Bearer ${key}`).set("Referer", referrer);
    expect(own.status).toBe(passes ? 200 : 403);
  });

  it("refuses a request without a referrer", async () => {
    expect((await supertest(svc.app).post("/verify").send({ key })).body).toMatchObject({ code: "RESTRICTED", reason: "referrer" });
  });

  it.each([
    ["a star inside a label", "https://*partner.example/*", /restrictions\.referrers\[0\]: must use \* in the host only as whole labels/],
    ["a star ending a label", "https://partner*.example/*", /whole labels/],
    ["a star for the scheme", "*://a.partner.example/*", /restrictions\.referrers\[0\]: must be a URL/],
    ["no scheme", "*.partner.example/*", /must be a URL/],
    ["user information", "https://*@a.partner.example/*", /user information/],
    ["a query", "https://a.partner.example/*?x=*", /query or fragment/],
    ["a star for the port", "https://a.partner.example:*/", /host or port/],
  ])("refuses a pattern whose parts cannot be read, with a 400 naming it: %s", async (_name, pattern, message) => {
    const policy = { restrictions: { referrers: [pattern] } };
    const made = await svc.as(acme.keys.customer).post("/customers/acme/keys", { name: `bad ${pattern}`, policy });
    expect([made.status, made.body.error]).toEqual([400, "bad_request"]);
    expect(made.body.message).toMatch(message);
    const put = await supertest(svc.app).put("/admin/customers/acme/policy").set("Authorization", `Bearer ${svc.adminToken}`).send(policy);
    expect([put.status, put.body.error]).toEqual([400, "bad_request"]);
    expect(put.body.message).toMatch(message);
  });
});
