// /openapi.json says what the server checks: a request the server refuses (400) is one the document
// refuses too, so that a client or an API tester (Schemathesis) that trusts the document is not
// surprised. Each row below is sent to the server, which must answer 400, and validated with ajv
// against the operation's request body or query parameter in the served document, which must refuse
// it. A rule no schema can state (a time in the future) is said in the field's description instead,
// and its rows check that. The document also lists every method /auth answers.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pathPointer } from "../../src/http/openapi.ts";
import { METHODS } from "../../src/http/route.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

interface Operation {
  parameters?: { name?: string; in?: string; schema?: object }[];
  requestBody?: { content: { "application/json": { schema: { properties?: Record<string, { description?: string }> } } } };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

interface Row {
  what: string;
  method: "get" | "post" | "put";
  /** The operation's path in the document. */
  template: string;
  /** The path sent, when it is not the template (which then has no parameters). */
  path?: string;
  admin?: boolean;
  body?: unknown;
  query?: Record<string, string>;
  /** A rule the document cannot state: it accepts the request, and this field's description says why. */
  unstated?: string;
}

const future = new Date(Date.now() + 30 * 86_400_000).toISOString();
const past = "2020-01-01T00:00:00Z";
const emoji = (n: number) => "\u{1F511}".repeat(n);
const label = (n: number) => "a".repeat(n);

function rows(acme: Tenant, keyId: number): Row[] {
  const key = `/keys/${keyId}`;
  const c = "/admin/customers/{customer}";
  const cPath = "/admin/customers/acme";
  const d = `${c}/domains/{domain}`;
  const dPath = `${cPath}/domains/${acme.domains[0]}`;
  const provision = (what: string, body: Record<string, unknown>, unstated?: string): Row => ({ what: `POST /keys: ${what}`, method: "post", template: "/keys", body, unstated });
  const update = (what: string, body: Record<string, unknown>, unstated?: string): Row =>
    ({ what: `PUT /keys/{keyId}: ${what}`, method: "put", template: "/keys/{keyId}", path: key, body, unstated });
  const rotate = (what: string, body: Record<string, unknown>): Row =>
    ({ what: `POST /keys/{keyId}/rotate: ${what}`, method: "post", template: "/keys/{keyId}/rotate", path: `${key}/rotate`, body });
  const admin = (what: string, template: string, path: string, body: Record<string, unknown>): Row => ({ what, method: "post", template, path, admin: true, body });
  const customer = (what: string, name: unknown) => admin(`a customer named ${what}`, "/admin/customers", "/admin/customers", { name });
  const domain = (what: string, name: unknown) => admin(`a domain ${what}`, `${c}/domains`, `${cPath}/domains`, { domain: name });
  const application = (what: string, body: Record<string, unknown>) => admin(`an application ${what}`, `${d}/applications`, `${dPath}/applications`, { name: "ivr2", ...body });
  const subscriber = (what: string, msisdn: unknown) => admin(`a subscriber ${what}`, `${d}/subscribers`, `${dPath}/subscribers`, { msisdn });
  const user = (what: string, body: Record<string, unknown>) => admin(`a user ${what}`, `${c}/users`, `${cPath}/users`, body);
  const verify = (what: string, body: Record<string, unknown>): Row => ({ what: `POST /verify: ${what}`, method: "post", template: "/verify", body });
  const policy = (what: string, p: unknown, unstated?: string): Row =>
    ({ what: `PUT /keys/{keyId}: a policy with ${what}`, method: "put", template: "/keys/{keyId}", path: key, body: { policy: p }, unstated });
  const entityPolicy = (what: string, body: unknown): Row =>
    ({ what: `PUT /domains/{domain}/policy: ${what}`, method: "put", template: "/domains/{domain}/policy", path: `/domains/${acme.domains[0]}/policy`, body });
  const credits = (what: string, body: unknown): Row =>
    ({ what: `PUT /keys/{keyId}/credits: ${what}`, method: "put", template: "/keys/{keyId}/credits", path: `${key}/credits`, body });
  const webhook = (what: string, body: unknown, unstated?: string): Row => ({ what: `POST /webhooks: ${what}`, method: "post", template: "/webhooks", body, unstated });
  const webhookChange = (what: string, body: unknown): Row =>
    ({ what: `PUT /webhooks/{webhookId}: ${what}`, method: "put", template: "/webhooks/{webhookId}", path: "/webhooks/1", body });
  const adminWebhook = (what: string, body: unknown, unstated?: string): Row =>
    ({ what: `POST /admin/webhooks: ${what}`, method: "post", template: "/admin/webhooks", admin: true, body, unstated });
  const list = (what: string, template: string, query: Record<string, string>, path = template): Row =>
    ({ what: `GET ${template}: ${what}`, method: "get", template, path, query, admin: template.startsWith("/admin") });
  return [
    provision("a name over 128 characters", { name: "n".repeat(129) }),
    provision("a name of 129 emoji", { name: emoji(129) }),
    provision("an empty name", { name: "" }),
    provision("a name that is a number", { name: 7 }),
    provision("no name", {}),
    provision("a name with a control character", { name: "a\nb" }),
    provision("a name with a lone surrogate", { name: "key\uD800" }),
    provision("a name with NUL", { name: "a\u0000b" }),
    provision("active as a string", { name: "a", active: "yes" }),
    provision("expiresAt and expiresIn together", { name: "a", expiresAt: future, expiresIn: 3600 }),
    provision("expiresIn under 60", { name: "a", expiresIn: 59 }),
    provision("expiresIn over ten years", { name: "a", expiresIn: 315_360_001 }),
    provision("expiresIn not whole", { name: "a", expiresIn: 90.5 }),
    provision("expiresAt without an offset", { name: "a", expiresAt: "2999-01-01T00:00:00" }),
    provision("expiresAt a date alone", { name: "a", expiresAt: "2999-01-01" }),
    provision("expiresAt in the past", { name: "a", expiresAt: past }, "expiresAt"),
    update("a name over 128 characters", { name: "n".repeat(129) }),
    update("active as a number", { active: 1 }),
    update("expiresAt not a time", { expiresAt: "tomorrow" }),
    update("expiresAt in the past", { expiresAt: past }, "expiresAt"),
    policy("a field no policy has", { quota: 1 }),
    policy("a restriction no policy has", { restrictions: { countries: ["SE"] } }),
    policy("an empty list of ips", { restrictions: { ips: [] } }),
    policy("101 methods", { restrictions: { methods: Array.from({ length: 101 }, () => "GET") } }),
    policy("a method in lower case", { restrictions: { methods: ["get"] } }),
    policy("a path of 2049 characters", { restrictions: { paths: [`/${"p".repeat(2048)}`] } }),
    policy("an ip with a lone surrogate", { restrictions: { ips: ["10.0.0.1\uD800"] } }),
    policy("ips that is no list", { restrictions: { ips: "10.0.0.1" } }),
    policy("11 rate limits", { ratelimits: Array.from({ length: 11 }, (_, i) => ({ name: `l${i}`, limit: 1, windowSeconds: 1 })) }),
    policy("a rate limit without a name", { ratelimits: [{ limit: 1, windowSeconds: 1 }] }),
    policy("a rate limit named with a space", { ratelimits: [{ name: "a b", limit: 1, windowSeconds: 1 }] }),
    policy("a limit of 0", { ratelimits: [{ name: "a", limit: 0, windowSeconds: 1 }] }),
    policy("a limit over a billion", { ratelimits: [{ name: "a", limit: 1_000_000_001, windowSeconds: 1 }] }),
    policy("a window over thirty days", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 2_592_001 }] }),
    policy("a window not whole", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1.5 }] }),
    policy("a rate limit with a field no limit has", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1, burst: 2 }] }),
    policy("credits below 0", { credits: { remaining: -1 } }),
    policy("credits over 10^12", { credits: { remaining: 1_000_000_000_001 } }),
    policy("a weekly refill", { credits: { remaining: 1, refill: { amount: 1, interval: "weekly" } } }),
    policy("a refill of 0", { credits: { remaining: 1, refill: { amount: 0, interval: "daily" } } }),
    policy("a refill on day 32", { credits: { remaining: 1, refill: { amount: 1, interval: "monthly", day: 32 } } }),
    policy("a refill on day 0", { credits: { remaining: 1, refill: { amount: 1, interval: "monthly", day: 0 } } }),
    policy("an address that is none", { restrictions: { ips: ["999.0.0.1"] } }),
    policy("a prefix too long", { restrictions: { ips: ["10.0.0.0/33"] } }),
    policy("an address with a zone", { restrictions: { ips: ["fe80::1%eth0"] } }),
    policy("a referrer that is no URL", { restrictions: { referrers: ["acme.example"] } }),
    policy("a referrer with a space", { restrictions: { referrers: ["https://acme.example/a b"] } }),
    policy("a path with * inside a segment", { restrictions: { paths: ["/customers/a*"] } }),
    policy("a path without its leading /", { restrictions: { paths: ["customers/acme/**"] } }),
    policy("a path with a .. segment", { restrictions: { paths: ["/customers/acme/../globex"] } }),
    policy("a path with a malformed escape", { restrictions: { paths: ["/customers/%zz"] } }),
    policy("a rate limit's path without its leading /", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1, paths: ["calls"] }] }),
    policy("two rate limits of one name", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1 }, { name: "a", limit: 2, windowSeconds: 2 }] }, "policy"),
    entityPolicy("a policy that is a list", []),
    entityPolicy("a policy that is a string", "none"),
    entityPolicy("a field no policy has", { plan: "gold" }),
    entityPolicy("credits as a string", { credits: { remaining: "10" } }),
    credits("neither remaining nor add", {}),
    credits("both remaining and add", { remaining: 1, add: 1 }),
    credits("remaining below 0", { remaining: -1 }),
    credits("remaining over 10^12", { remaining: 1_000_000_000_001 }),
    credits("add not whole", { add: 1.5 }),
    credits("add below -10^12", { add: -1_000_000_000_001 }),
    credits("add as a string", { add: "5" }),
    credits("a field besides", { add: 1, note: "x" }),
    credits("a body that is null", null),
    rotate("gracePeriodSeconds below 0", { gracePeriodSeconds: -1 }),
    rotate("gracePeriodSeconds over thirty days", { gracePeriodSeconds: 2_592_001 }),
    rotate("gracePeriodSeconds as a string", { gracePeriodSeconds: "60" }),
    rotate("expiresAt and expiresIn together", { expiresAt: future, expiresIn: 3600 }),
    rotate("expiresIn under 60", { expiresIn: 59 }),
    customer("by digits only", "12345"),
    customer("self", "self"),
    customer("SELF", "SELF"),
    customer("with 65 characters", "c".repeat(65)),
    customer("with a space", "a b"),
    customer("with a letter outside ASCII", "café"),
    customer("by a number", 7),
    domain("with an empty label", "sip..acme.example"),
    domain("with a label that starts with -", "-sip.acme.example"),
    domain("with a trailing dot", "sip.acme.example."),
    domain("with an underscore", "sip_acme.example"),
    domain("with a label of 64 characters", `${label(64)}.example`),
    domain("whose last label is numeric", "10.0.0.1"),
    domain("of 254 characters", [label(63), label(63), label(63), label(62)].join(".")),
    domain("with a letter outside ASCII", "ünï.example"),
    domain("that is a number", 7),
    application("named by digits only", { name: "42" }),
    application("named self", { name: "self" }),
    application("with an ftp url", { url: "ftp://ivr.acme.example/answer" }),
    application("with a url that is no URL", { url: "not a url" }),
    application("with a space in its url", { url: "https://ivr.acme.example/a b" }),
    application("with a method it cannot take", { method: "PUT" }),
    subscriber("of 2 digits", "12"),
    subscriber("of 16 digits", "+1234567890123456"),
    subscriber("with a letter", "12a45"),
    subscriber("given as a number", 12125550100),
    user("with no email", {}),
    user("with an email that is none", { email: "not-an-email" }),
    user("with an email over 254 characters", { email: `${label(64)}@${[label(63), label(63), label(63)].join(".")}.example` }),
    user("with an empty domain", { email: "new@acme.example", domain: "" }),
    admin("a bootstrap key with an empty name", `${c}/keys`, `${cPath}/keys`, { name: "" }),
    verify("no key", {}),
    verify("a key that is a number", { key: 7 }),
    verify("a key of 257 characters", { key: "X".repeat(257) }),
    verify("a path without its leading /", { key: acme.keys.domain, path: "customers/acme/calls" }),
    verify("a path that is a URL", { key: acme.keys.domain, path: "https://api.acme.example/calls" }),
    verify("an empty path", { key: acme.keys.domain, path: "" }),
    verify("a path with a lone surrogate", { key: acme.keys.domain, path: "/\uD800" }),
    verify("a method with a space", { key: acme.keys.domain, method: "G T" }),
    verify("an empty method", { key: acme.keys.domain, method: "" }),
    verify("a method of 17 letters", { key: acme.keys.domain, method: "ABCDEFGHIJKLMNOPQ" }),
    verify("a method with a digit", { key: acme.keys.domain, method: "GET1" }),
    verify("a method that is a number", { key: acme.keys.domain, method: 7 }),
    verify("an ip that is no address", { key: acme.keys.domain, ip: "not-an-address" }),
    verify("an ip out of range", { key: acme.keys.domain, ip: "10.0.0.256" }),
    verify("an ip that is a CIDR", { key: acme.keys.domain, ip: "10.0.0.0/8" }),
    verify("an ip with a zone", { key: acme.keys.domain, ip: "fe80::1%eth0" }),
    webhook("no url", {}),
    webhook("a url that is a number", { url: 7 }),
    webhook("an ftp url", { url: "ftp://hooks.acme.example/" }),
    webhook("a url with a space", { url: "https://hooks.acme.example/a b" }),
    webhook("a url over 2048 characters", { url: `https://hooks.acme.example/${"a".repeat(2048)}` }),
    webhook("no events", { url: "https://hooks.acme.example/", events: [] }),
    webhook("an event type that is none", { url: "https://hooks.acme.example/", events: ["key.made"] }),
    webhook("a description over 256 characters", { url: "https://hooks.acme.example/", description: "d".repeat(257) }),
    webhook("a description that is a number", { url: "https://hooks.acme.example/", description: 5 }),
    webhook("an http url", { url: "http://hooks.acme.example/" }, "url"),
    webhook("a loopback address", { url: "https://127.0.0.1/hook" }, "url"),
    webhook("a loopback address in hexadecimal", { url: "https://0x7f000001/hook" }, "url"),
    webhook("a name that resolves to loopback", { url: "https://localhost/hook" }, "url"),
    webhook("a user name and password", { url: "https://user:pw@hooks.acme.example/" }, "url"),
    webhookChange("active as a string", { active: "no" }),
    webhookChange("no events", { events: [] }),
    webhookChange("a url that is no URL", { url: "hooks.acme.example" }),
    adminWebhook("a scope without its customer", { url: "https://hooks.acme.example/", scope: { domain: "sip.acme.example" } }),
    adminWebhook("a scope with a field no scope has", { url: "https://hooks.acme.example/", scope: { customer: "acme", team: "x" } }),
    adminWebhook("an application without its domain", { url: "https://hooks.acme.example/", scope: { customer: "acme", application: "ivr" } }),
    adminWebhook("a subscriber without its domain", { url: "https://hooks.acme.example/", scope: { customer: "acme", subscriber: "+15550100" } }),
    adminWebhook("an application and a subscriber", { url: "https://hooks.acme.example/", scope: { customer: "acme", domain: acme.domains[0], application: "ivr", subscriber: "+15550100" } }),
    list("limit 0", "/webhooks", { limit: "0" }),
    list("limit over 1000", "/webhooks", { limit: "1001" }),
    list("a limit that is no number", "/webhooks", { limit: "ten" }),
    list("after below 0", "/webhooks", { after: "-1" }),
    list("limit 0", "/admin/webhooks", { limit: "0" }),
    list("after below 0", "/admin/webhooks", { after: "-1" }),
    list("limit 0", "/webhooks/{webhookId}/deliveries", { limit: "0" }, "/webhooks/1/deliveries"),
    list("a state that is none", "/webhooks/{webhookId}/deliveries", { state: "lost" }, "/webhooks/1/deliveries"),
    list("limit 0", "/keys", { limit: "0" }),
    list("limit over 1000", "/keys", { limit: "1001" }),
    list("a limit that is no number", "/keys", { limit: "ten" }),
    list("after below 0", "/keys", { after: "-1" }),
    list("active neither true nor false", "/keys", { active: "yes" }),
    list("a type that is none", "/keys", { type: "robot" }),
    list("an empty name", "/keys", { name: "" }),
    list("a name over 128 characters", "/keys", { name: "n".repeat(129) }),
    list("limit 0", "/events", { limit: "0" }),
    list("before 0", "/events", { before: "0" }),
    list("an action that is none", "/events", { action: "made" }),
    list("an action that is none", "/admin/events", { action: "made" }),
    list("an action that is none", "/keys/{keyId}/events", { action: "made" }, `${key}/events`),
  ];
}

describe("the document and the server agree", () => {
  let svc: TestService;
  let acme: Tenant;
  let keyId: number;
  let doc: Document;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // A query parameter arrives as text: read as its schema's type, as a client writes it.
  const queryAjv = new Ajv2020({ strict: false, coerceTypes: true });
  const DOC_ID = "https://keyplane.test/openapi.json";

  beforeAll(async () => {
    svc = await startService("pglite");
    acme = await createTenant(svc, "acme");
    keyId = (await svc.as(acme.keys.customer).post("/keys", { name: "rotated-never" })).body.id as number;
    doc = (await supertest(svc.app).get("/openapi.json")).body as Document;
    for (const a of [ajv, queryAjv]) (addFormats as unknown as (ajv: Ajv2020) => void)(a);
    ajv.addSchema({ ...doc, $id: DOC_ID });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  /** Why the document refuses the row's request, or undefined when it takes it. */
  function refusal(row: Row): string | undefined {
    const op = doc.paths[row.template]?.[row.method];
    if (!op) throw new Error(`no operation ${row.method} ${row.template} in the document`);
    if (row.body !== undefined) {
      const validate = ajv.getSchema(`${DOC_ID}${pathPointer(row.template)}/${row.method}/requestBody/content/application~1json/schema`) as ValidateFunction;
      if (!validate(row.body)) return ajv.errorsText(validate.errors);
    }
    for (const [name, value] of Object.entries(row.query ?? {})) {
      const parameter = op.parameters?.find((p) => p.in === "query" && p.name === name);
      if (!parameter?.schema) return `no query parameter ${name}`;
      const holder = { value };
      const validate = queryAjv.compile({ type: "object", properties: { value: parameter.schema } });
      if (!validate(holder)) return `${name}: ${queryAjv.errorsText(validate.errors)}`;
    }
    return undefined;
  }

  async function answer(row: Row): Promise<{ status: number; text: string }> {
    const as = row.admin ? svc.admin : svc.as(acme.keys.customer);
    const path = (row.path ?? row.template) + (row.query ? `?${new URLSearchParams(row.query)}` : "");
    if (row.method === "get") return as.get(path);
    // Sent as JSON text whatever it is: a body may be null, a list or a string.
    const token = row.admin ? svc.adminToken : acme.keys.customer;
    const req = supertest(svc.app)[row.method](path).set("Authorization", `Bearer ${token}`);
    return row.body === undefined ? req : req.set("Content-Type", "application/json").send(JSON.stringify(row.body));
  }

  it("every row is refused by the server (400) and by the document, or says in the document why not", async () => {
    for (const row of rows(acme, keyId)) {
      const a = await answer(row);
      expect(a.status, `${row.what}: the server answered ${a.status} ${a.text}`).toBe(400);
      const why = refusal(row);
      if (!row.unstated) {
        expect(why, `${row.what}: the document takes it`).toBeDefined();
        continue;
      }
      expect(why, `${row.what}: the document refuses a rule it says it cannot state`).toBeUndefined();
      const op = doc.paths[row.template]![row.method]!;
      const description = op.requestBody!.content["application/json"].schema.properties![row.unstated]!.description;
      expect(description, row.what).toMatch(/is 400.*cannot state/);
    }
  });

  it("takes what the server takes: the examples, and names at their limits", async () => {
    const good: Row[] = [
      { what: "128 emoji", method: "post", template: "/keys", body: { name: emoji(128) } },
      { what: "expiresIn alone", method: "post", template: "/keys", body: { name: "b", expiresIn: 60 } },
      { what: "a customer name of 64", method: "post", template: "/admin/customers", admin: true, body: { name: "c".repeat(64) } },
      { what: "a domain of 253", method: "post", template: "/admin/customers/{customer}/domains", path: "/admin/customers/acme/domains", admin: true,
        body: { domain: [label(63), label(63), label(63), label(61)].join(".") } },
      { what: "a domain in capitals", method: "post", template: "/admin/customers/{customer}/domains", path: "/admin/customers/acme/domains", admin: true,
        body: { domain: "SIP.Zeta.Example" } },
      { what: "a method on /verify", method: "post", template: "/verify", body: { key: acme.keys.domain, path: "/calls", method: "propfind" } },
      { what: "a policy at every bound", method: "put", template: "/keys/{keyId}", path: `/keys/${keyId}`, body: { policy: {
        restrictions: { ips: ["0.0.0.0/0", "::/0"], referrers: ["*"], methods: ["GET"], paths: ["/**"] },
        ratelimits: Array.from({ length: 10 }, (_, i) => ({ name: `l${i}`.padEnd(64, "x"), limit: 1_000_000_000, windowSeconds: 2_592_000 })),
        credits: { remaining: 1_000_000_000_000, refill: { amount: 1, interval: "monthly", day: 31 } },
      } } },
      { what: "a domain's policy removed", method: "put", template: "/domains/{domain}/policy", path: `/domains/${acme.domains[0]}/policy`, body: null },
      { what: "a domain's policy of credits", method: "put", template: "/domains/{domain}/policy", path: `/domains/${acme.domains[0]}/policy`, body: { credits: { remaining: 0 } } },
      { what: "credits taken from a domain", method: "put", template: "/domains/{domain}/credits", path: `/domains/${acme.domains[0]}/credits`, body: { add: -1_000_000_000_000 } },
    ];
    for (const row of good) {
      const a = await answer(row);
      expect(a.status, `${row.what}: ${a.text}`).toBeLessThan(300);
      expect(refusal(row), row.what).toBeUndefined();
    }
  });

  it("takes and refuses the same policy entries and /verify ips as the server, entry by entry", async () => {
    const entries: Record<"ips" | "referrers" | "paths", string[]> = {
      ips: ["203.0.113.0/24", "2001:db8::/32", "::ffff:192.0.2.1", "1:2:3:4:5:6:7::", "0.0.0.0/0", "999.0.0.1", "10.0.0.0/33", "01.2.3.4",
        "fe80::1%eth0", "1::2::3", "::/129", "10.0.0.1/", "2001:db8::/032"],
      referrers: ["https://*.acme.example/*", "*", "http://a.example", "ftp://files.example/*", "acme.example", "/path", "https://a b", "https://a\tb", "9x://a"],
      paths: ["/customers/acme/calls/**", "/customers/*/calls", "/", "/%C3%A9", "/a%2Fb", "/...", "customers", "/a*", "/***", "/a?b", "/a#b",
        "/./a", "/a/%2e%2E", "/%zz", "/%C3", "/%FF", "/%ED%A0%80"],
    };
    const disagree: string[] = [];
    for (const [kind, list] of Object.entries(entries)) {
      for (const entry of list) {
        const row: Row = { what: `${kind} ${JSON.stringify(entry)}`, method: "put", template: "/keys/{keyId}", path: `/keys/${keyId}`,
          body: { policy: { restrictions: { [kind]: [entry] } } } };
        const server = (await answer(row)).status;
        const document = refusal(row) === undefined ? 200 : 400;
        if (server !== document) disagree.push(`${row.what}: the server ${server}, the document ${document}`);
      }
    }
    for (const ip of ["192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1", "::", "10.0.0.256", "10.0.0.0/8", "fe80::1%eth0", "01.2.3.4", "1::2::3", "acme"]) {
      const row: Row = { what: `/verify ip ${JSON.stringify(ip)}`, method: "post", template: "/verify", body: { key: acme.keys.domain, ip } };
      const server = (await answer(row)).status;
      const document = refusal(row) === undefined ? 200 : 400;
      if (server !== document) disagree.push(`${row.what}: the server ${server}, the document ${document}`);
    }
    expect(disagree).toEqual([]);
    // The policy set last is taken away: the rows above are the test's, not the key's.
    await svc.as(acme.keys.customer).put(`/keys/${keyId}`, { policy: null });
  });

  it("declares every method that works on /keys/self and /apikeys/self, and a 405 there allows them all", async () => {
    for (const path of ["/keys/self", "/apikeys/self"]) {
      // Another spelling's path item refers to the canonical one's.
      const ref = (doc.paths[path] as { $ref?: string } | undefined)?.$ref;
      const item = ref ? doc.paths[decodeURIComponent(ref.replace("#/paths/", "")).replaceAll("~1", "/").replaceAll("~0", "~")] : doc.paths[path];
      expect(Object.keys(item ?? {}).filter((m) => (METHODS as readonly string[]).includes(m)).sort(), path).toEqual(["delete", "get", "put"]);
      const token = (await svc.as(acme.keys.customer).post("/keys", { name: `self-${path.length}` })).body.keyId as string;
      const as = svc.as(token);
      for (const method of ["post", "patch"] as const) {
        const refused = await supertest(svc.app)[method](path).set("Authorization", `Bearer ${token}`);
        expect(refused.status, `${method} ${path}`).toBe(405);
        expect(refused.headers.allow, `${method} ${path}`).toBe("GET, PUT, DELETE");
      }
      expect((await as.get(path)).status).toBe(200);
      const renamed = await as.put(path, { name: `renamed-${path.length}` });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.body).toMatchObject({ name: `renamed-${path.length}` });
      expect((await as.delete(path)).status).toBe(204);
      expect((await as.get(path)).status).toBe(401);
    }
  });

  it("lists every method /auth and /auth/{path} answer, each answered (401 without a key), none 405", async () => {
    for (const path of ["/auth", "/auth/customers/acme/calls"]) {
      const template = path === "/auth" ? "/auth" : "/auth/{path}";
      for (const method of METHODS) {
        expect(doc.paths[template]?.[method], `${method} ${template}`).toBeDefined();
        const a = await supertest(svc.app)[method](path);
        expect(a.status, `${method.toUpperCase()} ${path}: ${a.text}`).toBe(401);
      }
    }
  });
});
