import { request } from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorFields } from "../../src/domain/errors.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { createLogger, scrub } from "../../src/logging.ts";
import { openPglite } from "../../src/store/pglite.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
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

function sendTo(server: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<number> {
  return new Promise<number>((resolve) => {
    const url = new URL(server);
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body && { "content-type": "application/json" }) } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
    req.end(body);
  });
}

/** The secrets among `secrets` that the log holds in any spelling, shown by their first characters. */
function secretsIn(logs: string[], secrets: string[]): string[] {
  const haystack = decodeAll(logs.join(""));
  return secrets.filter((secret) => haystack.includes(secret.toLowerCase())).map((f) => `${f.slice(0, 6)}…`);
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

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

  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) => sendTo(http.url, method, path, headers, body);

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
          send("PATCH", `/admin/customers/${s}`, auth(svc.adminToken)),
          send("POST", "/verify", {}, JSON.stringify({ key: s, path: `/keys/${s}`, method: "GET" })),
          send("GET", `/keys/${s}`, { ...auth(root), "content-type": "text/plain" }, s),
        ]);
      }
    }
    const log = svc.logs.join("");
    expect(log).toMatch(/"route":"\/keys\/self"/); // the log is being written, and names routes
    expect(log).toMatch(/"msg":"query"/); // with every statement, at debug
    expect(secretsIn(svc.logs, [...tokens, svc.adminToken])).toEqual([]);
  });

  it("logs the calling key by its numeric id, on the fast path and on express routes", async () => {
    const caller = (await svc.as(acme.keys.domain).get("/keys/self")).body as { id: number };
    svc.logs.length = 0;
    await send("GET", "/keys/self", auth(acme.keys.domain));
    await send("GET", "/keys", auth(acme.keys.domain));
    const lines = svc.logs.map((l) => JSON.parse(l) as { msg: string; route?: string; key?: number }).filter((l) => l.msg === "request");
    expect(lines.map((l) => [l.route, l.key])).toEqual([["/keys/self", caller.id], ["/keys", caller.id]]);
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

describe("secrets out of the log when the database fails", () => {
  it("never logs a token or the admin token while the database is gone", { timeout: 60_000 }, async () => {
    const svc = await startService("pglite");
    const http = await listen(svc.app, 0, "127.0.0.1");
    try {
      const acme = await createTenant(svc, "acme");
      const tokens = [acme.keys.customer, acme.keys.subscriber];
      await svc.database.db.close();
      for (const secret of [...tokens, svc.adminToken]) {
        for (const s of spellings(secret)) {
          await Promise.all([
            sendTo(http.url, "GET", "/keys/self", auth(s)),
            sendTo(http.url, "GET", `/keys/${s}`, auth(acme.keys.customer)),
            sendTo(http.url, "POST", "/keys", auth(s), JSON.stringify({ name: s })),
            sendTo(http.url, "GET", `/admin/customers/${s}`, auth(svc.adminToken)),
            sendTo(http.url, "GET", "/readyz", { "x-request-id": s.slice(0, 128) }),
          ]);
        }
      }
      expect(svc.logs.join("")).toMatch(/"msg":"database unavailable"/);
      expect(secretsIn(svc.logs, [...tokens, svc.adminToken])).toEqual([]);
    } finally {
      await http.close(100);
      await svc.stop().catch(() => undefined);
    }
  });

  it("logs a failed statement by its SQL text, code and message, never its parameters", async () => {
    const logs: string[] = [];
    const log = captureLogger(logs);
    const db = await openPglite(undefined, log);
    const token = "XI0123456789ABCDEF0123456789AB7798";
    try {
      // PostgreSQL's message repeats the value it could not read: here, a token.
      const error = await db.query("SELECT $1::int AS n", [token.toLowerCase()]).then(() => undefined, (e: unknown) => e);
      log.error({ err: errorFields(error) }, "unexpected error");
      const line = JSON.parse(logs.at(-1)!) as { err: Record<string, unknown> };
      expect(line.err).toMatchObject({ code: "22P02", statement: "SELECT $1::int AS n", message: expect.stringContaining("integer") });
      expect(Object.keys(line.err)).not.toContain("params");
      expect(secretsIn(logs, [token])).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it.skipIf(!backends().includes("postgres"))("logs a lost PostgreSQL connection as code and message, never the pg client with its cancel key", async () => {
    const { url, drop } = await createPostgresDatabase();
    const lines: string[] = [];
    let heard: (line: string) => void;
    const lost = new Promise<string>((resolve) => (heard = resolve));
    const log = createLogger({
      level: "debug",
      destination: {
        write: (line: string) => {
          lines.push(line);
          if (line.includes("database connection lost")) heard(line);
        },
      },
    });
    const db = openPostgres({ connectionString: url, log });
    const killer = new pg.Client({ connectionString: url });
    try {
      // The pool's one connection, idle after this query, is ended by the server.
      const [backend] = await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      await killer.connect();
      await killer.query("SELECT pg_terminate_backend($1)", [backend!.pid]);
      const line = JSON.parse(await lost) as { err: Record<string, unknown> };
      expect(Object.keys(line.err).sort()).toEqual(expect.arrayContaining(["code", "message"]));
      expect(Object.keys(line.err).filter((k) => !["type", "code", "message", "stack", "query"].includes(k))).toEqual([]);
      expect(lines.join("")).not.toMatch(/secretKey|processID|"client"/);
    } finally {
      await killer.end();
      await db.close();
      await drop();
    }
  });
});
