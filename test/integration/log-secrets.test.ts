import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorFields } from "../../src/domain/errors.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { scrub } from "../../src/logging.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// No log line holds a token or the admin token, in any spelling a request can carry them: sent in
// every spelling through every route family (path, query, headers, body), at debug level, then the
// whole log is percent-decoded and case-folded, and searched. docs/api.md, "Logs".
const percent = (text: string, upper = true) => [...text].map((c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0")[upper ? "toUpperCase" : "toLowerCase"]()).join("");

/** The ways a request can spell a secret in a URL, a header or a JSON string. */
export function spellings(secret: string): string[] {
  const alternating = [...secret].map((c, i) => (i % 2 ? c.toLowerCase() : c.toUpperCase())).join("");
  return [
    secret, secret.toLowerCase(), secret.toUpperCase(), alternating,
    percent(secret.slice(0, 1)) + secret.slice(1), percent(secret), percent(secret.toLowerCase(), false),
    secret.slice(0, 10) + percent(secret.slice(10, 20)) + secret.slice(20),
    "%25" + percent(secret.slice(0, 1)).slice(1) + secret.slice(1), // percent-encoded twice
  ];
}

function decodeAll(text: string): string {
  let current = text;
  for (let i = 0; i < 4; i++) current = current.replace(/%[0-9A-Fa-f]{2}/g, (e) => String.fromCharCode(parseInt(e.slice(1), 16)));
  return current.toLowerCase();
}

describe("secrets out of every log line", () => {
  let svc: TestService;
  let http: Listening;
  let acme: Tenant;
  let tokens: string[];

  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<number>((resolve) => {
      const url = new URL(http.url);
      const req = request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body && { "content-type": "application/json" }) } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", () => resolve(0));
      req.end(body);
    });

  beforeAll(async () => {
    svc = await startService("pglite");
    http = await listen(svc.app, 0, "127.0.0.1");
    acme = await createTenant(svc, "acme");
    tokens = [acme.keys.customer, acme.keys.domain, acme.keys.application, acme.keys.customerUser];
  });
  afterAll(async () => {
    await http?.close(100);
    await svc?.stop();
  });

  it("never logs a token or the admin token, whatever the spelling, route or place", { timeout: 120_000 }, async () => {
    const root = acme.keys.customer;
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    for (const secret of [...tokens, svc.adminToken]) {
      for (const s of spellings(secret)) {
        const q = encodeURIComponent(s);
        await Promise.all([
          send("GET", `/keys/${s}`, auth(root)),
          send("GET", `/apikeys/${s}?name=${q}`, auth(root)),
          send("PUT", `/customers/acme/keys/${s}`, auth(root), JSON.stringify({ name: s })),
          send("DELETE", `/tenants/acme/apikeys/${s}`, auth(root)),
          send("GET", `/domains/${s}/keys`, auth(root)),
          send("GET", `/applications/${s}/keys?after=${q}`, auth(root)),
          send("GET", "/keys/self", auth(s)),
          send("GET", "/keys/self", { authorization: `bearer ${s}`, "x-request-id": s }),
          send("POST", "/keys", { ...auth(s), "x-request-id": s.slice(0, 128) }, JSON.stringify({ name: s })),
          send("POST", "/keys", auth(root), `{"name": "${s}", "active": "${s}"}`),
          send("GET", `/admin/customers/${s}`, auth(svc.adminToken)),
          send("GET", `/admin/customers/acme/users/${s}`, auth(s)),
          send("POST", "/admin/customers", auth(s), JSON.stringify({ name: s })),
          send("GET", `/nowhere/${s}?token=${q}`, auth(s)),
          send("PATCH", `/keys/${s}`, auth(s)),
          send("GET", `/keys/${s}`, { ...auth(root), "content-type": "text/plain" }, s),
        ]);
      }
    }
    const log = svc.logs.join("");
    expect(log).toMatch(/"route":"\/keys\/self"/); // the log is being written, and names routes
    const haystack = decodeAll(log);
    const found = [...tokens, svc.adminToken].filter((secret) => haystack.includes(secret.toLowerCase()));
    expect(found.map((f) => `${f.slice(0, 6)}…`)).toEqual([]);
  });

  it("logs a database error as its kind, code and message, never as the driver's objects", () => {
    const error = Object.assign(new Error("Connection terminated unexpectedly"), { code: "57P01", client: { processID: 7, secretKey: 123456 } });
    const fields = errorFields(error);
    expect(Object.keys(fields).sort()).toEqual(["code", "message", "stack", "type"]);
    expect(JSON.stringify(fields)).not.toContain("secretKey");
  });

  it("scrubs a token spelled in any way from a line, keeping the rest", () => {
    const token = "XI0123456789ABCDEF0123456789AB7798";
    for (const s of spellings(token)) expect(decodeAll(scrub(`{"path":"/keys/${s}","ms":1}`))).not.toContain(token.toLowerCase());
    expect(scrub('{"path":"/keys/17","reqId":"6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f"}')).toBe('{"path":"/keys/17","reqId":"6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f"}');
    expect(scrub(`admin kpa_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789`, ["kpa_abcdefghijklmnopqrstuvwxyz0123456789"])).toBe("admin [redacted]");
  });
});
