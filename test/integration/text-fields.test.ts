// Text of every kind in every string a request carries (docs/api.md, "Text"), generated with fast-check
// as UTF-16: unpaired surrogates, NUL, the non-characters U+FFFE and U+FFFF, astral characters, long
// strings. In a body it travels as JSON escapes ("\ud800"), which JSON allows and UTF-8 cannot carry;
// in a path or a query it is percent-encoded as a client could: UTF-8 (a lone surrogate as U+FFFD),
// WTF-8 (a lone surrogate as its own three bytes, %ED%A0%80, which is no UTF-8), or JavaScript's old
// escape() (%uD800). Whatever arrives, the answer is never a server error: it is the JSON error body,
// 400 for text that is not well-formed Unicode without NUL, or the value stored and read back exactly
// as it was sent.
import { Agent, request } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isText } from "../../src/domain/text.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

/** docs/api.md, "Errors": the code of each status. */
const CODES: Record<number, string> = {
  400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
};

// ---- text, and the ways a client may put it in a URL ----

/** Any one UTF-16 code unit: half of a surrogate pair, NUL, a control character, U+FFFF... */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const odd = fc.constantFrom("\uD800", "\uDBFF", "\uDC00", "\uDFFF", "\u0000", "\uFFFE", "\uFFFF", "\u{1F511}", "\u{10FFFF}", "\u00E9", "\u212A");
const plain = fc.stringMatching(/^[a-z][a-z0-9.-]{0,12}$/);

/** Text as a careless or hostile client might send it, and as a good one would (so that some is stored). */
const anyText = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: fc.oneof(codeUnit, odd), maxLength: 24 }) },
  { weight: 3, arbitrary: fc.tuple(plain, fc.array(fc.oneof(odd, codeUnit), { minLength: 1, maxLength: 3 }), plain).map(([a, b, c]) => a + b.join("") + c) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom("\u{1F511}", "\uFFFE", "\uFFFF", "\u00E9", "a"), minLength: 1, maxLength: 140 }) },
  { weight: 1, arbitrary: plain },
  { weight: 1, arbitrary: fc.stringMatching(/^\+?[0-9]{1,16}$/) },
  { weight: 1, arbitrary: fc.string({ unit: fc.oneof(codeUnit, odd), minLength: 300, maxLength: 3000 }) },
);

/** The bytes of each code point as UTF-8 would encode it, a lone surrogate too (that is WTF-8). */
function wtf8(s: string): number[] {
  const bytes: number[] = [];
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return bytes;
}
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const hex = (n: number, digits: number) => n.toString(16).toUpperCase().padStart(digits, "0");
const percent = (bytes: Iterable<number>) => [...bytes].map((b) => (UNRESERVED.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${hex(b, 2)}`)).join("");

type Encoding = "utf-8" | "wtf-8" | "escape";
const ENCODINGS: Encoding[] = ["utf-8", "wtf-8", "escape"];
/** Text percent-encoded for a path segment or a query value, in one of the ways a client could. */
function encode(s: string, how: Encoding): string {
  if (how === "utf-8") return percent(new TextEncoder().encode(s));
  if (how === "wtf-8") return percent(wtf8(s));
  // escape() goes by UTF-16 unit: %XX up to U+00FF, %uXXXX above, each half of a pair on its own.
  return Array.from({ length: s.length }, (_, i) => s.charCodeAt(i))
    .map((u) => (UNRESERVED.test(String.fromCharCode(u)) ? String.fromCharCode(u) : u > 0xff ? `%u${hex(u, 4)}` : `%${hex(u, 2)}`))
    .join("");
}

// ---- requests ----

interface Answer {
  status: number;
  type: string | undefined;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function send(server: Listening, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  const url = new URL(server.url);
  // JSON.stringify writes a lone surrogate as the escape \ud800, as JSON lets any client do.
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers = { authorization: `Bearer ${token}`, ...(payload && { "content-type": "application/json", "content-length": payload.length }) };
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, type: res.headers["content-type"], text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(payload);
  });
}

const shown = (s: string) => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…(${s.length})` : s);

/** Never a server error; an error is the JSON body of the catalogue, its status the HTTP one. */
function expectAnswered(a: Answer, what: string): void {
  expect(a.status, `${what} answered ${a.status}: ${a.text.slice(0, 300)}`).toBeLessThan(500);
  if (a.status < 400) return;
  expect(a.type, what).toMatch(/^application\/json\b/);
  expect(JSON.parse(a.text), what).toEqual({ status: a.status, error: CODES[a.status], message: expect.stringMatching(/\S/) });
}

// ---- where text goes ----

interface Field {
  /** The request, as a reader of a failure sees it. */
  what: string;
  admin?: boolean;
  method: "POST" | "PUT";
  path: string;
  /** The field's value made of the text (by default the text itself). */
  value?: (text: string) => string;
  body: (value: string, n: number) => Record<string, unknown>;
  /** Where a value that was taken is read back: the answer's field and a GET of what was made or changed. */
  stored?: { field: (answer: Record<string, unknown>) => unknown; get: (answer: Record<string, unknown>) => string; lowerCase?: boolean };
  /** The answers besides 400 that this field may get (taken, conflicting, naming nothing). */
  statuses: number[];
  /** Text the field takes, tried first (so that every run stores and reads back something). */
  good: string;
}

function fields(acme: Tenant, targetId: number, rotorId: () => number): Field[] {
  const c = "/admin/customers/acme";
  const d = `${c}/domains/sip.acme.example`;
  const id = (a: Record<string, unknown>) => a.id as number;
  return [
    { what: "POST /admin/customers name", admin: true, method: "POST", path: "/admin/customers", body: (name) => ({ name }), statuses: [201, 409], good: "Zeta_2",
      stored: { field: (a) => a.name, get: (a) => `/admin/customers/${id(a)}` } },
    { what: "POST .../domains domain", admin: true, method: "POST", path: `${c}/domains`, body: (domain) => ({ domain }), statuses: [201, 409], good: "Media-2.ACME.example",
      stored: { field: (a) => a.domain, get: (a) => `${c}/domains/${id(a)}`, lowerCase: true } },
    { what: "POST .../applications name", admin: true, method: "POST", path: `${d}/applications`, body: (name) => ({ name }), statuses: [201, 409], good: "ivr.2",
      stored: { field: (a) => a.name, get: (a) => `${d}/applications/${id(a)}` } },
    { what: "POST .../applications url", admin: true, method: "POST", path: `${d}/applications`, value: (text) => `https://ivr.acme.example/${text}`,
      body: (url, n) => ({ name: `app-${n}`, url }),
      statuses: [201], good: "\u{1F511}?q=\uFFFE", stored: { field: (a) => a.url, get: (a) => `${d}/applications/${id(a)}` } },
    { what: "POST .../applications method", admin: true, method: "POST", path: `${d}/applications`, body: (method, n) => ({ name: `by-${n}`, method }), statuses: [201], good: "GET" },
    { what: "POST .../subscribers msisdn", admin: true, method: "POST", path: `${d}/subscribers`, body: (msisdn) => ({ msisdn }), statuses: [201, 409], good: "+15550001234",
      stored: { field: (a) => a.msisdn, get: (a) => `${d}/subscribers/${id(a)}` } },
    { what: "POST .../users email", admin: true, method: "POST", path: `${c}/users`, body: (email) => ({ email }), statuses: [201, 409], good: "Zeta.Two@acme.example",
      stored: { field: (a) => a.email, get: (a) => `${c}/users/${id(a)}` } },
    { what: "POST .../users domain", admin: true, method: "POST", path: `${c}/users`, body: (domain, n) => ({ email: `u${n}@acme.example`, domain }), statuses: [201, 404], good: "SIP.acme.example" },
    { what: "POST /admin/customers/{customer}/keys name", admin: true, method: "POST", path: `${c}/keys`, body: (name) => ({ name }), statuses: [200], good: "\u{1F511}".repeat(128),
      stored: { field: (a) => a.name, get: (a) => `/keys/${id(a)}` } },
    { what: "POST /keys name", method: "POST", path: "/keys", body: (name) => ({ name }), statuses: [200], good: "ключ \u{10FFFF}\uFFFE\uFFFF",
      stored: { field: (a) => a.name, get: (a) => `/keys/${id(a)}` } },
    { what: "POST /domains/{domain}/keys expiresAt", method: "POST", path: `/domains/${acme.domains[0]}/keys`, body: (expiresAt, n) => ({ name: `exp-${n}`, expiresAt }), statuses: [200], good: "2999-01-01T00:00:00Z" },
    { what: "PUT /keys/{key-id} name", method: "PUT", path: `/keys/${targetId}`, body: (name) => ({ name }), statuses: [200, 409], good: "\u00E9\u0301 \u{1F511}",
      stored: { field: (a) => a.name, get: () => `/keys/${targetId}` } },
    { what: "PUT /keys/{key-id} expiresAt", method: "PUT", path: `/keys/${targetId}`, body: (expiresAt) => ({ expiresAt }), statuses: [200], good: "2999-01-01T00:00:00+05:30" },
    { what: "POST /keys/{key-id}/rotate expiresAt", method: "POST", get path() { return `/keys/${rotorId()}/rotate`; }, body: (expiresAt) => ({ expiresAt }), statuses: [200], good: "2999-01-01T00:00:00Z" },
    { what: "POST /verify key", method: "POST", path: "/verify", body: (key) => ({ key }), statuses: [200], good: "XI\u{1F511}" },
    { what: "POST /verify path", method: "POST", path: "/verify", value: (text) => `/${text}`, body: (path) => ({ key: acme.keys.domain, path }), statuses: [200], good: "\u{1F511}/%ED%A0%80" },
    { what: "POST /verify method", method: "POST", path: "/verify", body: (method) => ({ key: acme.keys.domain, path: "/calls", method }), statuses: [200], good: "propfind" },
  ];
}

const RUNS = { numRuns: 60 };

describe.each(backends())("text in every field, on %s", (backend) => {
  let svc: TestService;
  let server: Listening;
  let acme: Tenant;
  let targetId: number;
  let n = 0;

  beforeAll(async () => {
    svc = await startService(backend);
    server = await listen(svc.app, 0, "127.0.0.1");
    acme = await createTenant(svc, "acme");
    const made = await send(server, "POST", "/keys", acme.keys.customer, { name: "renamed-by-the-fuzzer" });
    targetId = (JSON.parse(made.text) as { id: number }).id;
  });
  afterAll(async () => {
    agent.destroy();
    await server?.close(1_000);
    await svc?.stop();
  });

  /** A key made for one rotation: each rotation replaces its key, which cannot be rotated again. */
  let rotor = 0;
  const newRotor = async () => {
    const made = await send(server, "POST", "/keys", acme.keys.customer, { name: `rotor-${n++}` });
    rotor = (JSON.parse(made.text) as { id: number }).id;
  };

  it("in a body: 400 unless it is text; taken, it is stored and read back exactly as sent", async () => {
    for (const field of fields(acme, targetId, () => rotor)) {
      let taken = 0;
      await fc.assert(
        fc.asyncProperty(anyText, async (text) => {
          if (field.what.includes("rotate")) await newRotor();
          const value = field.value ? field.value(text) : text;
          const what = `${field.what} ${shown(value)}`;
          const a = await send(server, field.method, field.path, field.admin ? svc.adminToken : acme.keys.customer, field.body(value, n++));
          expectAnswered(a, what);
          // 413: a long text of escapes may make the body larger than 16 KiB.
          if (!isText(value)) return void expect([400, 413], `${what}: ${a.text.slice(0, 300)}`).toContain(a.status);
          expect([400, 413, ...field.statuses], `${what}: ${a.text.slice(0, 300)}`).toContain(a.status);
          if (a.status >= 300) return;
          taken++;
          if (!field.stored) return;
          const expected = field.stored.lowerCase ? value.toLowerCase() : value;
          const answer = JSON.parse(a.text) as Record<string, unknown>;
          expect(field.stored.field(answer), `${what}: the answer`).toBe(expected);
          const where = field.stored.get(answer);
          const read = await send(server, "GET", where, where.startsWith("/admin") ? svc.adminToken : acme.keys.customer);
          expect(read.status, `${what}: read back: ${read.text}`).toBe(200);
          expect(field.stored.field(JSON.parse(read.text) as Record<string, unknown>), `${what}: read back`).toBe(expected);
        }),
        { ...RUNS, examples: [[field.good], ["\uD800"], ["a\u0000"]] },
      );
      expect(taken, `${field.what}: nothing was taken`).toBeGreaterThan(0);
    }
  });

  // Each identifier of a path, percent-encoded: GET only, so that no fuzzed identifier deletes anything.
  const PATHS: { template: (x: string) => string; admin?: boolean }[] = [
    { template: (x) => `/keys/${x}` },
    { template: (x) => `/apikeys/${x}/events` },
    { template: (x) => `/customers/${x}/keys` },
    { template: (x) => `/tenants/acme/domains/${x}/keys` },
    { template: (x) => `/customers/acme/domains/sip.acme.example/applications/${x}/keys` },
    { template: (x) => `/customers/acme/domains/sip.acme.example/subscribers/${x}/keys/${x}` },
    { template: (x) => `/domains/${x}/applications/${x}/apikeys` },
    { template: (x) => `/applications/${x}/keys` },
    { template: (x) => `/subscribers/${x}/keys` },
    { template: (x) => `/auth/customers/acme/domains/${x}/calls` },
    { template: (x) => `/admin/customers/${x}`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/${x}/applications`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/sip.acme.example/applications/${x}`, admin: true },
    { template: (x) => `/admin/customers/acme/domains/sip.acme.example/subscribers/${x}`, admin: true },
    { template: (x) => `/admin/customers/acme/users/${x}`, admin: true },
  ];

  it("in a path identifier, however percent-encoded: the JSON error body or an answer, never a server error", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), anyText, fc.constantFrom(...ENCODINGS), async (p, text, how) => {
        const path = p.template(encode(text, how));
        const what = `GET ${path.slice(0, 200)} (${how} of ${shown(text)})`;
        const a = await send(server, "GET", path, p.admin ? svc.adminToken : acme.keys.customer);
        expectAnswered(a, what);
        expect([200, 400, 401, 404], `${what}: ${a.text.slice(0, 300)}`).toContain(a.status);
      }),
      { numRuns: 200 },
    );
  });

  const QUERIES = [
    { path: "/keys", names: ["name", "after", "limit", "active", "type"] },
    { path: "/customers/self/domains/sip.acme.example/keys", names: ["name", "after"] },
    { path: "/events", names: ["action", "before", "limit"] },
    { path: "/admin/events", names: ["action", "before"], admin: true },
    { path: "/keys/self/events", names: ["action"] },
  ];

  it("in a query parameter, however percent-encoded: 200 or 400, never a server error", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...QUERIES), fc.nat(), anyText, fc.constantFrom(...ENCODINGS), async (q, i, text, how) => {
        const name = q.names[i % q.names.length]!;
        const path = `${q.path}?${name}=${encode(text, how)}`;
        const what = `GET ${path.slice(0, 200)} (${how} of ${shown(text)})`;
        const a = await send(server, "GET", path, q.admin ? svc.adminToken : acme.keys.customer);
        expectAnswered(a, what);
        expect([200, 400], `${what}: ${a.text.slice(0, 300)}`).toContain(a.status);
        // A query is decoded as UTF-8 or not at all: what is well-formed may filter, never be stored.
        if (name === "name" && a.status === 200) expect(Array.isArray(JSON.parse(a.text)), what).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
