// Bad input in every field and path of key policy (docs/api.md, "Key policy"), generated with
// fast-check: policies that are nearly right (one field of the wrong type, out of bounds, a malformed
// address, a lone surrogate, an unknown field), any JSON at all, credits bodies, and odd text in the
// identifiers of the new paths. The answer is never a server error: it is the JSON error body, or
// the policy taken and read back exactly as it was sent.
import fc from "fast-check";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

const CODES: Record<number, string> = { 400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large" };

// ---- values ----

const odd = fc.constantFrom("\uD800", "\uDFFF", "\u0000", "\uFFFF", "\u{1F511}", " ", "%", "*", "**", "/", "", "é", "\n");
const oddText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.tuple(fc.string({ maxLength: 6 }), odd, fc.string({ maxLength: 6 })).map(([a, b, c]) => a + b + c),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constant("x".repeat(2049)),
);
/** Numbers at and past every bound, fractions, and things that are no number. */
const number = fc.oneof(
  fc.integer({ min: -5, max: 40 }),
  fc.constantFrom(0, 1, -1, 31, 32, 1_000_000_000, 1_000_000_001, 2_592_000, 2_592_001, 1e12, 1e12 + 1, -1e12, -1e12 - 1, 2 ** 53, 1.5, -0, 1e308),
  fc.double({ noNaN: true }),
  fc.constantFrom("1", null, true, [], {}),
);
const anyJson = fc.jsonValue({ maxDepth: 3 });

const ip = fc.oneof(fc.constantFrom("203.0.113.0/24", "2001:db8::/32", "10.0.0.1", "::1", "203.0.113.0/33", "999.0.0.1", "fe80::1%eth0", "10.0.0.1/", "::ffff:10.0.0.1/120"), oddText);
const referrer = fc.oneof(fc.constantFrom("https://*.acme.example/*", "*", "acme.example", "https://a b"), oddText);
const method = fc.oneof(fc.constantFrom("GET", "POST", "get", "PROPFIND", "G T", "A".repeat(33)), oddText);
const path = fc.oneof(fc.constantFrom("/customers/acme/calls/**", "/customers/*/x", "/a*b", "/../x", "/%zz", "calls", "/x?y", "/"), oddText);

/** A list as a policy holds them: mostly right, sometimes empty, too long, or not a list. */
const list = <T>(entry: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: fc.array(entry, { minLength: 1, maxLength: 3 }) }, fc.constant([]), fc.array(entry, { minLength: 101, maxLength: 102 }), anyJson);

const restrictions = fc.record({ ips: list(ip), referrers: list(referrer), methods: list(method), paths: list(path) }, { requiredKeys: [] });
const ratelimit = fc.record({
  name: fc.oneof(fc.constantFrom("calls", "a.b-c_d", "x".repeat(65), "dup"), oddText),
  limit: number, windowSeconds: number, methods: list(method), paths: list(path),
}, { requiredKeys: ["name", "limit", "windowSeconds"] });
const credits = fc.record({
  remaining: number,
  refill: fc.record({ amount: number, interval: fc.oneof(fc.constantFrom("daily", "monthly", "weekly", "DAILY"), anyJson), day: number }, { requiredKeys: ["amount", "interval"] }),
}, { requiredKeys: ["remaining"] });

/** A policy that is nearly right, with sometimes a field no policy has. */
const policy = fc.tuple(
  fc.record({ restrictions, ratelimits: fc.array(ratelimit, { maxLength: 11 }), credits }, { requiredKeys: [] }),
  fc.option(fc.tuple(fc.constantFrom("", "restriction", "ratelimit", "credits.extra", "constructor", "__proto__"), anyJson), { freq: 4 }),
).map(([p, extra]) => {
  if (extra === null) return p;
  const [field, value] = extra;
  return field === "credits.extra" && p.credits ? { ...p, credits: { ...p.credits, extra: value } } : { ...p, [field]: value };
});
const policyOrAnything = fc.oneof({ weight: 8, arbitrary: policy }, anyJson);

// ---- requests ----

interface Answer {
  status: number;
  type: string | undefined;
  body: unknown;
  text: string;
}

describe.each(backends())("bad input to key policy, on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let target: number;
  let metered: number;

  const send = async (method: "get" | "put" | "post", path: string, token: string, body?: unknown): Promise<Answer> => {
    let req = supertest(svc.app)[method](path).set("Authorization", `Bearer ${token}`);
    // JSON.stringify writes a lone surrogate as the escape \ud800, as JSON lets any client do.
    if (body !== undefined) req = req.set("Content-Type", "application/json").send(JSON.stringify(body));
    const res = await req;
    return { status: res.status, type: res.headers["content-type"], body: res.body as unknown, text: res.text };
  };

  /** Never a server error; an error is the JSON body of the catalogue. */
  const expectAnswered = (a: Answer, what: string) => {
    expect(a.status, `${what} answered ${a.status}: ${a.text.slice(0, 300)}`).toBeLessThan(500);
    if (a.status < 400) return;
    expect(a.type, what).toMatch(/^application\/json\b/);
    expect(a.body, what).toEqual({ status: a.status, error: CODES[a.status], message: expect.stringMatching(/\S/) });
  };

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    // A customer none of whose keys calls: its fuzzed policy (restrictions too) binds no caller here.
    expect((await svc.admin.post("/admin/customers", { name: "zeta" })).status).toBe(201);
    target = (await svc.as(acme.keys.customer).post("/keys", { name: "fuzzed" })).body.id as number;
    metered = (await svc.as(acme.keys.customer).post("/keys", { name: "metered", policy: { credits: { remaining: 10 } } })).body.id as number;
  });
  afterAll(() => svc?.stop());

  const json = (x: unknown) => JSON.parse(JSON.stringify(x)) as unknown;
  let n = 0;

  /** Where a policy goes, and where it is read back when taken. */
  const PLACES: { what: string; send: (p: unknown) => Promise<Answer>; read: (a: Answer) => Promise<unknown> }[] = [
    {
      what: "PUT /keys/{key-id} policy",
      send: (p) => send("put", `/keys/${target}`, acme.keys.customer, { policy: p }),
      read: async () => (await send("get", `/keys/${target}`, acme.keys.customer)).body as unknown,
    },
    {
      what: "POST /domains/{domain}/keys policy",
      send: (p) => send("post", `/domains/${acme.domains[0]}/keys`, acme.keys.customer, { name: `fuzzed-${n++}`, policy: p }),
      read: async (a) => (await send("get", `/keys/${(a.body as { id: number }).id}`, acme.keys.customer)).body as unknown,
    },
    {
      what: "PUT /domains/{domain}/applications/{application}/policy",
      send: (p) => send("put", `/domains/${acme.domains[0]}/applications/ivr/policy`, acme.keys.customer, p),
      read: async () => ({ policy: (await send("get", `/domains/${acme.domains[0]}/applications/ivr/policy`, acme.keys.customer)).body }),
    },
    {
      what: "PUT /admin/customers/{customer}/policy",
      send: (p) => send("put", "/admin/customers/zeta/policy", svc.adminToken, p),
      read: async () => ({ policy: (await send("get", "/admin/customers/zeta/policy", svc.adminToken)).body }),
    },
  ];

  it("a policy nearly right, or any JSON: 400 with its reason, or taken and read back as sent", async () => {
    for (const place of PLACES) {
      let taken = 0;
      await fc.assert(
        fc.asyncProperty(policyOrAnything, async (p) => {
          const what = `${place.what} ${JSON.stringify(p)?.slice(0, 300)}`;
          const a = await place.send(p);
          expectAnswered(a, what);
          expect([200, 400, 413], what).toContain(a.status);
          if (a.status !== 200) return;
          taken++;
          const read = (await place.read(a)) as { policy: unknown };
          expect(read.policy, `${what}: read back`).toEqual(json(p));
        }),
        { numRuns: 80, examples: [[{ credits: { remaining: 5 } }], [{ restrictions: { ips: ["\uD800"] } }], [{ ratelimits: [{ name: "a", limit: 1, windowSeconds: 1 }, { name: "a", limit: 1, windowSeconds: 1 }] }]] },
      );
      expect(taken, `${place.what}: nothing was taken`).toBeGreaterThan(0);
    }
  });

  it("a credits body of any shape: 400 with the JSON body, or the balance it asks for", async () => {
    const body = fc.oneof(
      fc.record({ remaining: number }), fc.record({ add: number }), fc.record({ remaining: number, add: number }),
      fc.record({ add: number, more: anyJson }), anyJson,
    );
    for (const [what, path, token] of [
      ["PUT /keys/{key-id}/credits", `/keys/${metered}/credits`, () => acme.keys.customer],
      ["PUT /admin/customers/{customer}/credits", "/admin/customers/zeta/credits", () => svc.adminToken],
    ] as const) {
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          // The customer's policy may have no credits left by the test above: give it some.
          if (path.startsWith("/admin")) await send("put", "/admin/customers/zeta/policy", svc.adminToken, { credits: { remaining: 5 } });
          const a = await send("put", path, token(), b);
          const label = `${what} ${JSON.stringify(b)}`;
          expectAnswered(a, label);
          expect([200, 400], label).toContain(a.status);
          if (a.status !== 200) return;
          const { remaining } = a.body as { remaining: number };
          expect(Number.isInteger(remaining) && remaining >= 0 && remaining <= 1e12, label).toBe(true);
          if ("remaining" in (b as object)) expect(remaining, label).toBe((json(b) as { remaining: number }).remaining);
        }),
        { numRuns: 80 },
      );
    }
  });

  const PATHS: { template: (x: string) => string; admin?: boolean }[] = [
    { template: (x) => `/keys/${x}/credits` },
    { template: (x) => `/apikeys/${x}/credits` },
    { template: (x) => `/customers/${x}/policy` },
    { template: (x) => `/tenants/acme/domains/${x}/credits` },
    { template: (x) => `/domains/${x}/applications/${x}/policy` },
    { template: (x) => `/applications/${x}/credits` },
    { template: (x) => `/subscribers/${x}/policy` },
    { template: (x) => `/customers/acme/domains/sip.acme.example/subscribers/${x}/keys/${x}/credits` },
    { template: (x) => `/admin/customers/${x}/policy`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/${x}/credits`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/sip.acme.example/applications/${x}/policy`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/sip.acme.example/subscribers/${x}/credits`, admin: true },
  ];

  it("odd text in the identifiers of the new paths: the JSON error body or an answer, never a server error", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), oddText, fc.constantFrom("get", "put") as fc.Arbitrary<"get" | "put">, async (p, text, method) => {
        const where = p.template(encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, "\uFFFD")));
        const a = await send(method, where, p.admin ? svc.adminToken : acme.keys.customer, method === "put" ? { add: 1 } : undefined);
        expectAnswered(a, `${method} ${where.slice(0, 200)}`);
      }),
      { numRuns: 150 },
    );
  });
});
