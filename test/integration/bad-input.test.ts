// Bad input of every kind (docs/api.md, "Errors"), generated with fast-check: bodies, content types, Authorization
// headers, tokens, path segments and query strings. Whatever arrives, the server never answers 5xx, and
// every error it gives is the JSON body of the catalogue with the HTTP status repeated in it. Requests
// go out through node:http so that paths reach the server exactly as written (`..` and stray `%`
// included), which fetch would normalise. PGlite only: nothing here depends on the database server.
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { expectCleanLabels, namesOf } from "../support/metric-labels.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

/** docs/api.md, "Errors": the error codes, by status. */
const CATALOGUE: Record<number, string> = {
  400: "bad_request",
  401: "unauthorized",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  500: "internal",
  502: "bad_gateway",
  503: "unavailable",
};
const LIMIT = 16 * 1024;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}
interface Send {
  method: string;
  path: string;
  token?: string;
  /** The whole Authorization header, instead of `Bearer <token>`. */
  authorization?: string;
  contentType?: string;
  body?: string | Buffer;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length). */
  chunked?: boolean;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

let server: Listening;

function send(r: Send): Promise<Answer> {
  const url = new URL(server.url);
  const headers: Record<string, string | number> = {};
  if (r.authorization !== undefined) headers.authorization = r.authorization;
  else if (r.token !== undefined) headers.authorization = `Bearer ${r.token}`;
  if (r.contentType !== undefined) headers["content-type"] = r.contentType;
  const body = r.body === undefined ? undefined : Buffer.from(r.body);
  if (body) {
    if (r.chunked) headers["transfer-encoding"] = "chunked";
    else headers["content-length"] = body.length;
  }
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, method: r.method, path: r.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (body && r.chunked) {
      for (let i = 0; i < body.length; i += 4096) req.write(body.subarray(i, i + 4096));
      req.end();
    } else req.end(body);
  });
}

const describeSend = (r: Send) => `${r.method} ${r.path.length > 200 ? r.path.slice(0, 200) + "…" : r.path}`;

/** Never a server error; an error answer is JSON {status, error, message}, its status the HTTP one, its code the catalogue's. */
function expectWellFormed(a: Answer, what: string): void {
  expect(a.status, `${what} answered ${a.status}: ${a.text.slice(0, 300)}`).toBeLessThan(500);
  if (a.status < 400) return;
  expect(a.headers["content-type"], what).toMatch(/^application\/json\b/);
  let body: unknown;
  expect(() => (body = JSON.parse(a.text)), `${what}: not JSON: ${a.text.slice(0, 200)}`).not.toThrow();
  expect(body, what).toEqual({ status: a.status, error: CATALOGUE[a.status], message: expect.stringMatching(/\S/) });
}

function expectError(a: Answer, status: number, what: string): void {
  expectWellFormed(a, what);
  expect(a.status, `${what}: ${a.text.slice(0, 300)}`).toBe(status);
}

function expectUnauthorized(a: Answer, what: string): void {
  expectError(a, 401, what);
  expect(a.headers["www-authenticate"], what).toBe('Bearer realm="keyplane"');
}

// ---- generators ----

const HEX = "0123456789ABCDEF";
const hex = (n: number, digits = HEX) => fc.string({ unit: fc.constantFrom(...digits), minLength: n, maxLength: n });

/** Tokens that are almost a keyId (XI + 32 upper-case hex digits), and so must be refused before any look-up. */
const almostToken = fc.oneof(
  hex(32, "0123456789abcdef").filter((h) => /[a-f]/.test(h)).map((h) => "XI" + h), // lower-case hex
  hex(33).map((h) => "XI" + h.slice(0, 31) + h.slice(31).replace(/./, "G")), // a letter that is not hex
  hex(31).map((h) => "XI" + h), // 33 characters
  hex(33).map((h) => "XI" + h), // 35 characters
  fc.tuple(fc.constantFrom("xi", "Xi", "xI", "XJ", "IX", "YI", "X1", "", "XIX", "AXI"), hex(32)).map(([p, h]) => p + h), // wrong prefix
  fc.tuple(hex(32), fc.constantFrom(" ", "\t", "\u00a0", "=", ".", "%20")).map(([h, c]) => `XI${h.slice(0, 16)}${c}${h.slice(16)}`),
);

/** A header value Node can send: tab, printable ASCII and Latin-1. */
const headerChar = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c));
const headerValue = (max: number) => fc.string({ unit: headerChar, maxLength: max });

/** Authorization headers that carry no usable key. */
const badAuthorization = fc.oneof(
  headerValue(80),
  almostToken.map((t) => `Bearer ${t}`),
  almostToken.map((t) => `bearer ${t}`),
  fc.tuple(fc.constantFrom("Basic", "Token", "Bearer:", "Bearer\t", "Bearerx", "MAC", ""), hex(32)).map(([s, h]) => `${s} XI${h}`),
  headerValue(40).map((t) => `Bearer ${t}`),
  fc.constantFrom("Bearer", "Bearer ", "Bearer  ", "bearer", "Bearer XI", `Bearer XI${"0".repeat(32)} XI${"0".repeat(32)}`),
);

const PCHARS = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@"];
const pathText = (min: number, max: number, extra: string[] = []) => fc.string({ unit: fc.constantFrom(...PCHARS, ...extra), minLength: min, maxLength: max });

/** A path segment as a careless or hostile client might send it. */
const segment = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 30 }).map(encodeURIComponent), // any unicode, percent-encoded
  pathText(0, 30, ["%"]), // raw path characters, with stray percent signs
  pathText(1000, 8000), // very long
  fc.constantFrom(
    "..", ".", "%2e%2e", "%2E%2E%2F..", "..%2F..%2Fadmin", "%2F", "%00", "%", "%%", "%zz", "%E0%A4%A", "%C0%AF", "%FF%FE", "%ED%A0%80",
    "self", "SELF", "0", "-1", "+1", "1e3", "0x10", "00000000001", "2147483647", "2147483648", "99999999999999999999", "1.5",
    "%20", "XI" + "A".repeat(32), "xi" + "a".repeat(32), "null", "undefined", "NaN", "__proto__", "constructor", "%F0%9F%94%91",
  ),
  fc.uuid(),
  fc.nat().map(String),
);

// ---- the service ----

let svc: TestService;
let acme: Tenant;
/** A key at acme's customer scope that the body properties rename and toggle. */
let target: { id: number; keyId: string };

async function fuzzerKey(): Promise<string> {
  // The sandbox customer's key, provisioned again if a fuzzed DELETE took it.
  const made = await send({ method: "POST", path: "/admin/customers/sandbox/keys", token: svc.adminToken, contentType: "application/json", body: '{"name":"fuzzer"}' });
  expect(made.status, made.text).toBe(200);
  return (JSON.parse(made.text) as { keyId: string }).keyId;
}

beforeAll(async () => {
  svc = await startService("pglite", { metrics: true });
  server = await listen(svc.app, 0, "127.0.0.1");
  acme = await createTenant(svc, "acme");
  const made = await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: '{"name":"punching-bag"}' });
  target = JSON.parse(made.text) as { id: number; keyId: string };
  for (const [path, body] of [
    ["/admin/customers", { name: "sandbox" }],
    ["/admin/customers/sandbox/domains", { domain: "sip.sandbox.example" }],
    ["/admin/customers/sandbox/domains/sip.sandbox.example/applications", { name: "ivr" }],
    ["/admin/customers/sandbox/domains/sip.sandbox.example/subscribers", { msisdn: "15550001111" }],
  ] as const) {
    const res = await send({ method: "POST", path, token: svc.adminToken, contentType: "application/json", body: JSON.stringify(body) });
    expect(res.status, res.text).toBe(201);
  }
});
afterAll(async () => {
  agent.destroy();
  await server?.close(1_000);
  await svc?.stop();
});

// KEYPLANE_FUZZ_SCALE=10 runs every property ten times as long, for a deeper search than CI's.
const SCALE = Number(process.env.KEYPLANE_FUZZ_SCALE ?? 1);
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)) });
const RUNS = runs(150);

// ---- bodies ----

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/**
 * docs/api.md, "Errors": a name is a string of 1 to 128 characters, counted as code points (an emoji is
 * one). Undefined: the name is acceptable as far as the contract says.
 */
const nameProblem = (name: unknown) =>
  typeof name !== "string" ? "not a string" : name.length === 0 ? "empty" : [...name].length > 128 ? "over 128 characters" : undefined;
const hasControl = (v: unknown) => typeof v === "string" && [...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/** Why a provisioning body is bad (docs/api.md, "Keys" and "Errors"), or undefined when it is good. */
function provisionProblem(v: unknown): string | undefined {
  if (!isObject(v)) return "not an object";
  return nameProblem(v.name) ?? (v.active !== undefined && typeof v.active !== "boolean" ? "active is not a boolean" : undefined);
}
function updateProblem(v: unknown): string | undefined {
  if (!isObject(v)) return "not an object";
  if (v.name !== undefined && nameProblem(v.name)) return `name is ${nameProblem(v.name)}`;
  return v.active !== undefined && typeof v.active !== "boolean" ? "active is not a boolean" : undefined;
}

/** Bodies near the shape of a key request: the fields the service reads, with values of any type. */
const keyishBody = fc.record(
  {
    name: fc.oneof(fc.string({ unit: "grapheme", maxLength: 200 }), fc.string({ minLength: 120, maxLength: 140 }), fc.jsonValue()),
    active: fc.oneof(fc.boolean(), fc.jsonValue(), fc.constantFrom("yes", "true", 1, 0, null)),
  },
  { requiredKeys: [] },
);
const anyBody = fc.oneof(fc.jsonValue(), keyishBody);

describe("bodies", () => {
  it("POST on key paths: a good body provisions (200), any other JSON value is 400", async () => {
    const paths = ["/keys", "/apikeys", "/customers/self/keys", "/domains/sip.acme.example/keys"];
    await fc.assert(
      fc.asyncProperty(anyBody, fc.constantFrom(...paths), async (value, path) => {
        const r: Send = { method: "POST", path, token: acme.keys.customer, contentType: "application/json", body: JSON.stringify(value) };
        const a = await send(r);
        const problem = provisionProblem(value);
        const what = `${describeSend(r)} ${JSON.stringify(value)?.slice(0, 200)} (${problem ?? "good"})`;
        if (problem) expectError(a, 400, what);
        else if (hasControl((value as { name: string }).name)) expect([200, 400], what).toContain(a.status);
        else expect(a.status, `${what}: ${a.text}`).toBe(200);
        expectWellFormed(a, what);
      }),
      RUNS,
    );
  });

  it("PUT on a key: a good body updates (200, or 409 on a taken name), any other JSON value is 400", async () => {
    await fc.assert(
      fc.asyncProperty(anyBody, fc.boolean(), async (value, byKeyId) => {
        const ref = byKeyId ? target.keyId : String(target.id);
        const r: Send = { method: "PUT", path: `/customers/self/keys/${ref}`, token: acme.keys.customer, contentType: "application/json", body: JSON.stringify(value) };
        const a = await send(r);
        const problem = updateProblem(value);
        const what = `${describeSend(r)} ${JSON.stringify(value)?.slice(0, 200)} (${problem ?? "good"})`;
        if (problem) expectError(a, 400, what);
        else expect([200, 409, ...(hasControl((value as { name?: unknown }).name) ? [400] : [])], `${what}: ${a.text}`).toContain(a.status);
        expectWellFormed(a, what);
      }),
      RUNS,
    );
  });

  it("admin POSTs: any JSON value gets 201, 400, 404 or 409, never a server error", async () => {
    const paths = [
      "/admin/customers",
      "/admin/customers/sandbox/domains",
      "/admin/customers/sandbox/domains/sip.sandbox.example/applications",
      "/admin/customers/sandbox/domains/sip.sandbox.example/subscribers",
      "/admin/customers/sandbox/users",
      "/admin/customers/sandbox/keys",
    ];
    const adminish = fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 70 }), fc.string({ unit: "binary", maxLength: 20 }), fc.jsonValue()),
        domain: fc.oneof(fc.domain(), fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 20 }), fc.jsonValue()),
        msisdn: fc.oneof(fc.stringMatching(/^\+?[0-9]{1,17}$/), fc.jsonValue()),
        email: fc.oneof(fc.emailAddress(), fc.string(), fc.string({ unit: "binary", maxLength: 20 }), fc.jsonValue()),
        url: fc.oneof(fc.webUrl(), fc.string(), fc.jsonValue()),
        method: fc.oneof(fc.constantFrom("GET", "POST", "get", "PUT"), fc.jsonValue()),
        active: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), adminish), fc.constantFrom(...paths), async (value, path) => {
        const r: Send = { method: "POST", path, token: svc.adminToken, contentType: "application/json", body: JSON.stringify(value) };
        const a = await send(r);
        const what = `${describeSend(r)} ${JSON.stringify(value)?.slice(0, 200)}`;
        expectWellFormed(a, what);
        expect([200, 201, 400, 404, 409], `${what}: ${a.text}`).toContain(a.status);
        if (!isObject(value)) expect(a.status, what).toBe(400);
      }),
      RUNS,
    );
  });

  it("a user with any valid email up to 254 characters is created with its key, named by the email", async () => {
    // Longer than a key name may be (128): the user's key is still named by the whole email.
    const label = fc.stringMatching(/^[a-z0-9]{40,63}$/);
    const email = fc
      .tuple(fc.stringMatching(/^[a-z0-9]{1,64}$/), fc.array(label, { minLength: 2, maxLength: 3 }))
      .map(([local, labels]) => `${local}@${labels.join(".")}.example`)
      .filter((e) => e.length > 128 && e.length <= 254);
    await fc.assert(
      fc.asyncProperty(email, async (address) => {
        const r: Send = { method: "POST", path: "/admin/customers/sandbox/users", token: svc.adminToken, contentType: "application/json", body: JSON.stringify({ email: address }) };
        const a = await send(r);
        expectWellFormed(a, describeSend(r));
        expect(a.status, a.text).toBe(201);
        expect(JSON.parse(a.text)).toMatchObject({ email: address, key: { name: address, type: "user" } });
      }),
      { numRuns: 25 },
    );
  });

  const JSON_TYPES = ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8", " application/json "];
  const OTHER_TYPES = [
    undefined, "", "text/plain", "text/json", "text/html; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
    "application/xml", "application/octet-stream", "application/jsonx", "application/json-patch", "json", "*/*", "application/",
  ];
  /** What a JSON parser makes of the text, as the server decodes it (a byte order mark is dropped). */
  const parses = (s: string) => {
    try {
      JSON.parse(s.replace(/^\uFEFF/, ""));
      return true;
    } catch {
      return false;
    }
  };

  it("raw text bodies: under a non-JSON content type 415, unparseable JSON 400, parseable JSON 200 or 400", async () => {
    const text = fc.oneof(fc.string({ unit: "grapheme", maxLength: 200 }), fc.jsonValue().map((v) => JSON.stringify(v)), fc.constantFrom('{"name":"raw"}', "{", "[]", "  "));
    await fc.assert(
      fc.asyncProperty(text, fc.oneof(fc.constantFrom(...JSON_TYPES), fc.constantFrom(...OTHER_TYPES)), fc.constantFrom("POST", "PUT"), async (body, contentType, method) => {
        const path = method === "POST" ? "/keys" : `/keys/${target.id}`;
        const r: Send = { method, path, token: acme.keys.customer, contentType, body };
        const a = await send(r);
        const what = `${describeSend(r)} [${contentType}] ${JSON.stringify(body).slice(0, 200)}`;
        expectWellFormed(a, what);
        if (body.length === 0) return; // no body at all: the content type does not matter
        if (!JSON_TYPES.includes(contentType as string)) expectError(a, 415, what);
        else if (!parses(body)) expectError(a, 400, what);
        else expect([200, 400, 409], `${what}: ${a.text}`).toContain(a.status);
      }),
      RUNS,
    );
  });

  it("random content types and bodies, chunked or not, on key and admin paths: never a server error", async () => {
    const contentType = fc.oneof(
      headerValue(60),
      fc.constantFrom(...JSON_TYPES, ...OTHER_TYPES),
      fc.tuple(fc.constantFrom("application/json", "application/vnd.x+json"), headerValue(40)).map(([t, p]) => `${t};${p}`),
      fc.constantFrom("latin1", "utf-16", "utf-16le", "ascii", "bogus", "utf-8", "UTF-32", '"utf-8"').map((c) => `application/json; charset=${c}`),
    );
    const body = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)), fc.jsonValue().map((v) => JSON.stringify(v)));
    const where = fc.constantFrom(
      { method: "POST", path: "/keys", admin: false },
      { method: "PUT", path: "/keys/self", admin: false },
      { method: "POST", path: "/customers/self/keys", admin: false },
      { method: "DELETE", path: "/keys/999999", admin: false },
      { method: "GET", path: "/keys", admin: false },
      { method: "POST", path: "/admin/customers", admin: true },
      { method: "POST", path: "/admin/customers/sandbox/users", admin: true },
      { method: "POST", path: "/nowhere", admin: false },
    );
    await fc.assert(
      fc.asyncProperty(contentType, body, where, fc.boolean(), async (type, payload, w, chunked) => {
        const r: Send = { method: w.method, path: w.path, token: w.admin ? svc.adminToken : acme.keys.customer, contentType: type, body: payload, chunked };
        expectWellFormed(await send(r), `${describeSend(r)} [${type}]${chunked ? " chunked" : ""}`);
      }),
      RUNS,
    );
  });

  it("bodies over 16 KiB are 413, with or without Content-Length; at 16 KiB the name's length is what is wrong (400)", async () => {
    const over = fc.integer({ min: LIMIT + 1, max: 4 * LIMIT });
    await fc.assert(
      fc.asyncProperty(over, fc.boolean(), fc.constantFrom("/keys", "/customers/self/keys", "/admin/customers"), async (size, chunked, path) => {
        const body = `{"name":"${"x".repeat(size - 11)}"}`;
        expect(body.length).toBe(size);
        const token = path.startsWith("/admin") ? svc.adminToken : acme.keys.customer;
        const r: Send = { method: "POST", path, token, contentType: "application/json", body, chunked };
        expectError(await send(r), 413, `${describeSend(r)} ${size} bytes${chunked ? " chunked" : ""}`);
      }),
      runs(30),
    );
    const exactly = `{"name":"${"x".repeat(LIMIT - 11)}"}`;
    expectError(await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: exactly }), 400, "16 KiB exactly");
    const oneMore = `{"name":"${"x".repeat(LIMIT - 10)}"}`;
    expectError(await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: oneMore }), 413, "16 KiB and a byte");
  });

  it.each([
    ["malformed JSON", 400, "application/json", '{"name": "a",}'],
    ["JSON cut short", 400, "application/json", '{"name": "a"'],
    ["a body that is not JSON", 415, "text/plain", "name=a"],
    ["form data", 415, "application/x-www-form-urlencoded", "name=a"],
    ["JSON under a text content type", 415, "text/plain", '{"name":"a"}'],
    ["active as a string", 400, "application/json", '{"name":"a","active":"yes"}'],
    ["active as a number", 400, "application/json", '{"name":"a","active":1}'],
    ["a name that is a number", 400, "application/json", '{"name":7}'],
    ["an empty name", 400, "application/json", '{"name":""}'],
    ["a name of 129 characters", 400, "application/json", `{"name":"${"n".repeat(129)}"}`],
    ["no name", 400, "application/json", "{}"],
    ["an array", 400, "application/json", '[{"name":"a"}]'],
    ["null", 400, "application/json", "null"],
  ] as const)("POST /keys with %s: %i", async (what, status, contentType, body) => {
    expectError(await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType, body }), status, what);
  });

  it("names of 1 and 128 characters are good, 0 and 129 are not, on POST and PUT", async () => {
    for (const [length, status] of [[1, 200], [128, 200], [0, 400], [129, 400]] as const) {
      const post = await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: JSON.stringify({ name: "n".repeat(length) }) });
      expect(post.status, `POST name of ${length}: ${post.text}`).toBe(status);
      const body = JSON.stringify({ name: "p".repeat(length) });
      const put = await send({ method: "PUT", path: `/keys/${target.id}`, token: acme.keys.customer, contentType: "application/json", body });
      expect(put.status, `PUT name of ${length}: ${put.text}`).toBe(status);
      expectWellFormed(post, "POST");
      expectWellFormed(put, "PUT");
    }
  });
});

describe("characters", () => {
  it("a name is counted in characters, not UTF-16 units: 128 emoji are good, 129 are not, on POST and PUT", async () => {
    for (const [length, status] of [[128, 200], [129, 400]] as const) {
      const post = await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: JSON.stringify({ name: "\u{1F511}".repeat(length) }) });
      expect(post.status, `POST ${length} emoji: ${post.text}`).toBe(status);
      const body = JSON.stringify({ name: "\u{1F5DD}".repeat(length) });
      const put = await send({ method: "PUT", path: `/keys/${target.id}`, token: acme.keys.customer, contentType: "application/json", body });
      expect(put.status, `PUT ${length} emoji: ${put.text}`).toBe(status);
    }
  });

  it.each([
    ["a lone surrogate", "\\ud800"],
    ["a lone low surrogate after text", "key\\udc00"],
    ["a pair the wrong way round", "\\udc00\\ud800"],
    ["NUL", "a\\u0000b"],
  ])("a name with %s, escaped in JSON: 400, not a server error", async (_what, escaped) => {
    for (const [method, path] of [["POST", "/keys"], ["PUT", `/keys/${target.id}`], ["POST", "/admin/customers/sandbox/keys"]] as const) {
      const token = path.startsWith("/admin") ? svc.adminToken : acme.keys.customer;
      expectError(await send({ method, path, token, contentType: "application/json", body: `{"name":"${escaped}"}` }), 400, `${method} ${path} ${escaped}`);
    }
  });
});

// ---- credentials ----

// ---- the key lifecycle: expiry, rotation, events (docs/api.md, "Lifecycle" and "Events") ----

const HOUR = 3_600_000;
/** docs/api.md, "Lifecycle": an RFC 3339 time has a date, a time and an offset (Z or ±hh:mm). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** A time a request may carry: well-formed and in the future or the past, or text that is no RFC 3339 time, or no text. */
const timeValue = fc.oneof(
  fc.integer({ min: 1, max: 10 * 365 * 24 }).map((h) => new Date(Date.now() + h * HOUR).toISOString()),
  fc.integer({ min: 1, max: 10 * 365 * 24 }).map((h) => new Date(Date.now() + h * HOUR).toISOString().replace(/\.\d+Z$/, "+05:30")),
  fc.integer({ min: 0, max: 50 * 365 * 24 }).map((h) => new Date(Date.now() - h * HOUR).toISOString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 19)),
  fc.string({ maxLength: 40 }).filter((t) => !RFC3339.test(t)),
  fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue()),
);
const numberValue = (min: number, max: number) =>
  fc.oneof(fc.integer({ min, max }), fc.integer(), fc.double(), fc.constantFrom(min - 1, max + 1, String(min), "60s", null), fc.jsonValue());

/** Why an expiresAt is refused, judged against the time the request was sent (well clear of it: an hour). */
function timeProblem(v: unknown, sentAt: number): string | undefined {
  if (typeof v !== "string" || !RFC3339.test(v) || Number.isNaN(Date.parse(v))) return "not an RFC 3339 time";
  return Date.parse(v) <= sentAt ? "not in the future" : undefined;
}
const wholeIn = (v: unknown, min: number, max: number) => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

function expiryProblem(v: Record<string, unknown>, sentAt: number): string | undefined {
  if (v.expiresAt !== undefined && timeProblem(v.expiresAt, sentAt)) return `expiresAt is ${timeProblem(v.expiresAt, sentAt)}`;
  if (v.expiresIn !== undefined && !wholeIn(v.expiresIn, 60, 315_360_000)) return "expiresIn is out of range";
  if (v.expiresAt !== undefined && v.expiresIn !== undefined) return "both expiresAt and expiresIn";
  return undefined;
}

describe("lifecycle", () => {
  const expiryFields = { expiresAt: timeValue, expiresIn: numberValue(60, 315_360_000) };
  let n = 0;

  it("POST with an expiry: a good one provisions (200), any other is 400", async () => {
    await fc.assert(
      fc.asyncProperty(fc.record(expiryFields, { requiredKeys: [] }), async (fields) => {
        const body = { name: `expiring-${n++}`, ...fields };
        const r: Send = { method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: JSON.stringify(body) };
        const sentAt = Date.now();
        const a = await send(r);
        const problem = expiryProblem(body, sentAt);
        const what = `${describeSend(r)} ${JSON.stringify(body)} (${problem ?? "good"})`;
        if (problem) expectError(a, 400, what);
        else expect(a.status, `${what}: ${a.text}`).toBe(200);
      }),
      RUNS,
    );
  });

  it("PUT of expiresAt: a future time or null is 200, anything else 400", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(timeValue, fc.constant(null)), async (expiresAt) => {
        const r: Send = { method: "PUT", path: `/keys/${target.id}`, token: acme.keys.customer, contentType: "application/json", body: JSON.stringify({ expiresAt }) };
        const sentAt = Date.now();
        const a = await send(r);
        const problem = expiresAt === null ? undefined : timeProblem(expiresAt, sentAt);
        const what = `${describeSend(r)} ${JSON.stringify(expiresAt)} (${problem ?? "good"})`;
        if (problem) expectError(a, 400, what);
        else expect(a.status, `${what}: ${a.text}`).toBe(200);
      }),
      RUNS,
    );
  });

  it("POST .../rotate: a good body rotates (200), any other is 400; the key may be one already rotated (409)", async () => {
    const rotateBody = fc.record({ gracePeriodSeconds: numberValue(0, 2_592_000), ...expiryFields }, { requiredKeys: [] });
    /** The last key rotated, and when its grace period ends: until then it is 409 to rotate again, from then on gone (404). */
    let rotated: { id: number; graceEnd: number } | undefined;
    await fc.assert(
      fc.asyncProperty(fc.oneof(rotateBody, fc.jsonValue()), fc.boolean(), async (body, again) => {
        const made = await send({ method: "POST", path: "/keys", token: acme.keys.customer, contentType: "application/json", body: JSON.stringify({ name: `rotor-${n++}` }) });
        const id = again && rotated !== undefined ? rotated.id : (JSON.parse(made.text) as { id: number }).id;
        const r: Send = { method: "POST", path: `/keys/${id}/rotate`, token: acme.keys.customer, contentType: "application/json", body: JSON.stringify(body) };
        const sentAt = Date.now();
        const a = await send(r);
        const problem = !isObject(body) ? "not an object"
          : body.gracePeriodSeconds !== undefined && !wholeIn(body.gracePeriodSeconds, 0, 2_592_000) ? "gracePeriodSeconds is out of range"
          : expiryProblem(body, sentAt);
        const what = `${describeSend(r)} ${JSON.stringify(body)?.slice(0, 200)} (${problem ?? "good"})`;
        if (problem) expectError(a, 400, what);
        else if (id !== rotated?.id) expect(a.status, `${what}: ${a.text}`).toBe(200);
        else if (rotated.graceEnd + 1000 <= sentAt) expect(a.status, `${what}: ${a.text}`).toBe(404);
        else if (rotated.graceEnd > Date.now() + 1000) expect(a.status, `${what}: ${a.text}`).toBe(409);
        else expect([404, 409], `${what}: ${a.text}`).toContain(a.status); // its grace ended about now
        expectWellFormed(a, what);
        if (a.status === 200 && isObject(body)) rotated = { id, graceEnd: sentAt + ((body.gracePeriodSeconds as number | undefined) ?? 0) * 1000 };
      }),
      RUNS,
    );
  });

  it("event lists: limit, before and action are checked (400), never a server error", async () => {
    const param = fc.oneof(fc.nat().map(String), fc.string({ maxLength: 25 }), fc.constantFrom("0", "-1", "1.5", "1e3", "0x10", " 7", "9007199254740992", "created", "renamed"));
    const query = fc.record({ limit: param, before: param, action: param }, { requiredKeys: [] });
    const digitsIn = (v: string, min: number, max: number) => /^[0-9]+$/.test(v) && Number(v) >= min && Number(v) <= max;
    await fc.assert(
      fc.asyncProperty(query, fc.constantFrom("/events", "/admin/events", "/keys/self/events"), async (q, path) => {
        const token = path.startsWith("/admin") ? svc.adminToken : acme.keys.customer;
        const r: Send = { method: "GET", path: `${path === "/keys/self/events" ? `/keys/${target.id}/events` : path}?${new URLSearchParams(q)}`, token };
        const a = await send(r);
        const perKey = path === "/keys/self/events"; // one key's events take only action
        const problem =
          (!perKey && q.limit !== undefined && !digitsIn(q.limit, 1, 1000)) ||
          (!perKey && q.before !== undefined && !digitsIn(q.before, 1, Number.MAX_SAFE_INTEGER)) ||
          (q.action !== undefined && !["created", "updated", "rotated", "deleted", "expired"].includes(q.action));
        const what = `${describeSend(r)} (${problem ? "bad" : "good"})`;
        if (problem) expectError(a, 400, what);
        else expect(a.status, `${what}: ${a.text}`).toBe(200);
      }),
      RUNS,
    );
  });
});

describe("credentials", () => {
  const keyRequests = fc.constantFrom(
    { method: "GET", path: "/keys" },
    { method: "GET", path: "/keys/self" },
    { method: "GET", path: "/apikeys/self" },
    { method: "POST", path: "/keys" },
    { method: "GET", path: "/customers/self/keys" },
    { method: "GET", path: "/customers/acme/domains/sip.acme.example/keys" },
    { method: "PUT", path: "/domains/sip.acme.example/keys/1" },
    { method: "DELETE", path: "/keys/1" },
    { method: "GET", path: "/applications/ivr/keys" },
    { method: "GET", path: "/subscribers/self/keys" },
  );

  it("an Authorization header without a usable key is 401, and never reaches the database", async () => {
    await fc.assert(
      fc.asyncProperty(badAuthorization, keyRequests, async (authorization, { method, path }) => {
        const queries = svc.ctx.keyCache.stats().queries;
        const r: Send = { method, path, authorization, ...(method === "POST" ? { contentType: "application/json", body: '{"name":"x"}' } : {}) };
        expectUnauthorized(await send(r), `${describeSend(r)} with Authorization: ${JSON.stringify(authorization)}`);
        expect(svc.ctx.keyCache.stats().queries, `Authorization: ${JSON.stringify(authorization)} was looked up`).toBe(queries);
      }),
      runs(300),
    );
  });

  it("almost-valid tokens (lower-case hex, 33 or 35 characters, wrong prefix) are 401 without a look-up", async () => {
    const before = svc.ctx.keyCache.stats().queries;
    await fc.assert(
      fc.asyncProperty(almostToken, keyRequests, async (token, { method, path }) => {
        expectUnauthorized(await send({ method, path, token }), `${method} ${path} with ${JSON.stringify(token)}`);
      }),
      runs(200),
    );
    // and near misses of a real key
    const real = acme.keys.customer;
    for (const token of [real.toLowerCase(), real.slice(0, 33), real + "0", "XJ" + real.slice(2), real.slice(0, 20) + " " + real.slice(20), `"${real}"`]) {
      expectUnauthorized(await send({ method: "GET", path: "/keys/self", token }), `near miss ${token}`);
    }
    expect(svc.ctx.keyCache.stats().queries).toBe(before);
  });

  it("a well-formed unknown token is 401 too (after one look-up)", async () => {
    await fc.assert(
      fc.asyncProperty(hex(32), async (h) => {
        expectUnauthorized(await send({ method: "GET", path: "/keys/self", token: "XI" + h }), `XI${h}`);
      }),
      runs(50),
    );
  });

  it("the scheme is case-insensitive, as RFC 6750 has it", async () => {
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      const a = await send({ method: "GET", path: "/keys/self", authorization: `${scheme} ${acme.keys.customer}` });
      expect(a.status, scheme).toBe(200);
    }
  });

  it("the admin paths take the admin token and nothing else", async () => {
    const admin = svc.adminToken;
    const refused = fc.oneof(
      badAuthorization,
      fc.constantFrom(
        `Bearer ${acme.keys.customer}`, `Bearer ${acme.keys.customerUser}`, `Basic ${admin}`, `Bearer ${admin}x`, `Bearer ${admin.slice(0, -1)}`,
        `Bearer ${admin.toUpperCase()}`, admin, `Bearer  ${admin} ${admin}`,
      ),
    );
    const adminRequests = fc.constantFrom("/admin/customers", "/admin/customers/acme", "/admin/customers/acme/users", "/admin/customers/sandbox/domains");
    await fc.assert(
      fc.asyncProperty(refused, adminRequests, async (authorization, path) => {
        expectUnauthorized(await send({ method: "GET", path, authorization }), `GET ${path} with Authorization: ${JSON.stringify(authorization)}`);
      }),
      runs(150),
    );
    expect((await send({ method: "GET", path: "/admin/customers", authorization: `bearer ${admin}` })).status).toBe(200);
  });
});

// ---- paths and queries ----

describe("paths", () => {
  const keyTemplates: ((s: string[]) => string)[] = [
    ([a]) => `/keys/${a}`,
    ([a]) => `/apikeys/${a}`,
    ([a, b]) => `/keys/${a}/${b}`,
    ([a]) => `/customers/${a}/keys`,
    ([a, b]) => `/customers/${a}/keys/${b}`,
    ([a]) => `/tenants/${a}/apikeys`,
    ([a]) => `/customers/self/domains/${a}/keys`,
    ([a, b, c]) => `/customers/${a}/domains/${b}/applications/${c}/keys`,
    ([a, b]) => `/customers/self/domains/sip.sandbox.example/subscribers/${a}/keys/${b}`,
    ([a, b]) => `/domains/${a}/keys/${b}`,
    ([a, b]) => `/domains/${a}/subscribers/${b}/keys`,
    ([a]) => `/domains/sip.sandbox.example/applications/${a}/keys`,
    ([a]) => `/applications/${a}/keys`,
    ([a, b]) => `/subscribers/${a}/keys/${b}`,
    ([a]) => `/${a}`,
    ([a, b]) => `/${a}/${b}`,
    ([a]) => `/keys/self/${a}`,
  ];
  const adminTemplates: ((s: string[]) => string)[] = [
    ([a]) => `/admin/customers/${a}`,
    ([a]) => `/admin/customers/${a}/domains`,
    ([a]) => `/admin/customers/sandbox/domains/${a}`,
    ([a, b]) => `/admin/customers/${a}/domains/${b}/applications`,
    ([a]) => `/admin/customers/sandbox/domains/sip.sandbox.example/applications/${a}`,
    ([a]) => `/admin/customers/sandbox/domains/sip.sandbox.example/subscribers/${a}`,
    ([a]) => `/admin/customers/sandbox/users/${a}`,
    ([a]) => `/admin/customers/${a}/keys`,
    ([a]) => `/admin/${a}`,
  ];
  const methods = fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

  it("any segments on key paths: never a server error, errors in the JSON shape", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...keyTemplates), fc.array(segment, { minLength: 3, maxLength: 3 }), methods, async (template, segments, method) => {
        const token = await fuzzerKey();
        const r: Send = { method, path: template(segments), token, ...(method === "POST" || method === "PUT" ? { contentType: "application/json", body: '{"name":"fuzzed"}' } : {}) };
        expectWellFormed(await send(r), describeSend(r));
      }),
      runs(300),
    );
  });

  it("any segments on admin paths: never a server error, errors in the JSON shape", async () => {
    // No DELETE: a fuzzed segment must not take the customers the other properties work with.
    const adminMethods = fc.constantFrom("GET", "POST", "PUT", "PATCH", "OPTIONS");
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...adminTemplates), fc.array(segment, { minLength: 2, maxLength: 2 }), adminMethods, async (template, segments, method) => {
        const body = method === "POST" ? { contentType: "application/json", body: '{"name":"fuzzed"}' } : {};
        const r: Send = { method, path: template(segments), token: svc.adminToken, ...body };
        expectWellFormed(await send(r), describeSend(r));
      }),
      runs(200),
    );
  });

  it("any segments without credentials: 400 (undecodable), 401, 404 or 405, in the JSON shape", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...keyTemplates, ...adminTemplates), fc.array(segment, { minLength: 3, maxLength: 3 }), methods, async (template, segments, method) => {
        const r: Send = { method, path: template(segments) };
        const a = await send(r);
        expectWellFormed(a, describeSend(r));
        expect([400, 401, 404, 405], `${describeSend(r)}: ${a.text.slice(0, 200)}`).toContain(a.status);
      }),
      runs(200),
    );
  });

  // The two kinds of segment the properties above first found answered with 500.
  it.each([
    "/keys/%zz", "/keys/%", "/apikeys/%ED%A0%80", "/customers/%E0%A4%A/keys", "/domains/%ff%/keys", "/customers/self/keys/%C0%AF",
    "/admin/customers/%zz", "/admin/customers/acme/domains/%E0%A4%A",
  ])("malformed percent-encoding, GET %s: 400 bad_request", async (path) => {
    const a = await send({ method: "GET", path, token: path.startsWith("/admin") ? svc.adminToken : acme.keys.customer });
    expectError(a, 400, path);
  });

  it.each([
    ["/customers/%00/keys", [400, 401]],
    ["/domains/sip.acme.example%00/keys", [400, 401]],
    ["/customers/acme/domains/sip.acme.example/applications/ivr%00/keys", [400, 401]],
    ["/customers/acme/domains/sip.acme.example/subscribers/1%00/keys", [400, 401]],
    ["/admin/customers/%00", [400, 404]],
    ["/admin/customers/acme/domains/a%00b", [400, 404]],
    ["/admin/customers/acme/users/%00", [400, 404]],
  ] as const)("a NUL character in an identifier, GET %s: %j, not a server error", async (path, statuses) => {
    const a = await send({ method: "GET", path, token: path.startsWith("/admin") ? svc.adminToken : acme.keys.customer });
    expectWellFormed(a, path);
    expect(statuses, `${path}: ${a.text}`).toContain(a.status);
  });

  it("a NUL character in a user's domain (admin body): 400 or 404, not a server error", async () => {
    const body = JSON.stringify({ email: "nul@acme.example", domain: "sip.acme.example\u0000" });
    const a = await send({ method: "POST", path: "/admin/customers/acme/users", token: svc.adminToken, contentType: "application/json", body });
    expectWellFormed(a, "POST /admin/customers/acme/users");
    expect([400, 404], a.text).toContain(a.status);
  });

  it("any query string on a list: 200 or 400, never a server error", async () => {
    const value = fc.oneof(segment, fc.integer({ min: -5, max: 2000 }).map(String), fc.constantFrom("true", "false", "customer", "user", "Infinity", "1e400", "-0", "0x1f"));
    const pair = fc.tuple(fc.constantFrom("limit", "after", "active", "type", "name", "x", "limit[]", "__proto__", "name[a]"), value);
    await fc.assert(
      fc.asyncProperty(fc.array(pair, { maxLength: 4 }), fc.constantFrom("/keys", "/customers/self/keys", "/domains/sip.acme.example/keys"), async (pairs, base) => {
        const query = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join("&");
        const r: Send = { method: "GET", path: `${base}?${query}`, token: acme.keys.customer };
        const a = await send(r);
        expectWellFormed(a, describeSend(r));
        expect([200, 400], `${describeSend(r)}: ${a.text.slice(0, 200)}`).toContain(a.status);
        if (a.status === 200) expect(Array.isArray(JSON.parse(a.text)), describeSend(r)).toBe(true);
      }),
      runs(200),
    );
  });

  it.each([
    ["GET", "/nope"],
    ["GET", "/keys/self/extra"],
    ["POST", "/customers"],
    ["GET", "/admin"],
    ["DELETE", "/admin/customers/acme/domains/sip.acme.example/keys"],
  ])("%s %s: unknown route, 404 in the JSON shape", async (method, path) => {
    expectError(await send({ method, path, token: acme.keys.customer }), 404, `${method} ${path}`);
  });

  it.each([
    ["PATCH", "/keys", "GET, POST"],
    ["DELETE", "/keys", "GET, POST"],
    ["PUT", "/customers/acme/keys", "GET, POST"],
    ["POST", "/domains/sip.acme.example/keys/1", "GET, PUT, DELETE"],
    ["PATCH", "/subscribers/self/apikeys/1", "GET, PUT, DELETE"],
    ["PUT", "/admin/customers", "POST, GET"],
    ["POST", "/admin/customers/acme", "GET, DELETE"],
    ["DELETE", "/healthz", "GET"],
  ])("%s %s: wrong method, 405 with Allow: %s", async (method, path, allow) => {
    for (const token of [acme.keys.customer, undefined]) {
      const a = await send({ method, path, token });
      expectError(a, 405, `${method} ${path}`);
      expect(a.headers.allow, `${method} ${path}`).toBe(allow);
    }
  });
});

describe("metrics", () => {
  it("leaves no token, name or raw path in a label after all of the above", async () => {
    await expectCleanLabels(svc.metrics!, [...namesOf([acme]), "punching-bag", "sandbox", "sip.sandbox.example", "15550001111"]);
  });
});
