import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { githubEntries, githubReport, keyListServer, signature, signingKey, type KeyListServer } from "../support/github-scanner.ts";
import { connect, parseResponses } from "../support/raw-http.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// POST /leaks/github as GitHub's secret scanning partner program calls it (docs/leaks.md): a report is
// acted on only with GitHub's signature over its exact bytes, by a key of GitHub's list, which is
// fetched when an identifier is new and at most once a minute. Bodies up to 1 MiB and 1,000 tokens,
// on /admin/leaks too; whatever else arrives is answered with the JSON error body, never a 500.
type Key = { id: number; keyId: string };
const MINUTE = 60_000;

describe.each(backends())("POST /leaks/github on %s", (backend) => {
  const time = fakeClock();
  const github = signingKey("k1");
  const stranger = signingKey("k1"); // GitHub's identifier, someone else's key
  let keys: KeyListServer;
  let svc: TestService;
  let acme: Tenant;
  let http: Listening;

  beforeAll(async () => {
    keys = await keyListServer([github]);
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000, leaks: { githubKeysUrl: keys.url, policy: "disable" } });
    acme = await createTenant(svc, "acme");
    http = await listen(svc.app, 0, "127.0.0.1");
  });
  afterAll(async () => {
    await http?.close();
    await svc?.stop();
    await keys?.close();
  });

  const provision = async (name: string) => {
    const res = await svc.as(acme.keys.customer).post("/keys", { name });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };
  const expectError = (res: { status: number; body: unknown; headers: Record<string, string> }, status: number, error: string) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status, error, message: expect.any(String) });
  };
  /** The key was not acted on: it works, and its only event is its creation. */
  const untouched = async (key: Key) => {
    expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(200);
    const events = (await svc.as(acme.keys.customer).get(`/keys/${key.id}/events`)).body as { action: string }[];
    expect(events.map((e) => e.action)).toEqual(["created"]);
  };

  describe("the signature", () => {
    it("acts on a report GitHub signed", async () => {
      const key = await provision("signed");
      const res = await githubReport(svc, githubEntries(key.keyId), github);
      expect(res.status).toBe(200);
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
    });

    it.each([
      ["a body changed after signing", (body: string) => ({ body: body.replace("content", "commit"), headers: { "Github-Public-Key-Signature": signature(body, github) } })],
      ["a byte of whitespace added", (body: string) => ({ body: `${body} `, headers: { "Github-Public-Key-Signature": signature(body, github) } })],
      ["an identifier GitHub does not list", (body: string) => ({ body, headers: { "Github-Public-Key-Identifier": "unknown-key" } })],
      ["no identifier", (body: string) => ({ body, headers: { "Github-Public-Key-Identifier": undefined } })],
      ["no signature", (body: string) => ({ body, headers: { "Github-Public-Key-Signature": undefined } })],
      ["neither header", (body: string) => ({ body, headers: { "Github-Public-Key-Identifier": undefined, "Github-Public-Key-Signature": undefined } })],
      ["a signature that is not base64", (body: string) => ({ body, headers: { "Github-Public-Key-Signature": "not base64!" } })],
      ["an empty signature", (body: string) => ({ body, headers: { "Github-Public-Key-Signature": "" } })],
      ["a signature of another key under GitHub's identifier", (body: string) => ({ body, headers: { "Github-Public-Key-Signature": signature(body, stranger) } })],
      ["a signature of another body", (body: string) => ({ body, headers: { "Github-Public-Key-Signature": signature("[]", github) } })],
    ])("refuses %s: 401, and nothing is acted on", async (_name, make) => {
      const key = await provision(`refused-${Math.random().toString(36).slice(2, 8)}`);
      const { body, headers } = make(githubEntries(key.keyId));
      expectError(await githubReport(svc, body, github, headers), 401, "unauthorized");
      await untouched(key);
    });

    it("refuses an unsigned body before reading it: 401 for what is not even JSON", async () => {
      expectError(await githubReport(svc, "{not json", github, { "Github-Public-Key-Signature": undefined }), 401, "unauthorized");
      expectError(await githubReport(svc, "{not json", github), 400, "bad_request");
    });
  });

  describe("GitHub's key list", () => {
    it("is fetched once, kept, fetched again for an identifier not known at most once a minute, and a new key is found", async () => {
      const key = await provision("list-kept");
      const ok = async (signer = github) => (await githubReport(svc, githubEntries(key.keyId), signer)).status;
      expect(await ok()).toBe(200);
      const fetched = keys.fetches();
      expect(fetched).toBeGreaterThanOrEqual(1);
      expect(await ok()).toBe(200);
      expect(keys.fetches()).toBe(fetched);

      // Identifiers nobody knows: a fetch at most once a minute, however many arrive.
      time.advance(MINUTE);
      for (let i = 0; i < 5; i++) expect(await ok(signingKey(`made-up-${i}`))).toBe(401);
      expect(keys.fetches()).toBe(fetched + 1);

      // GitHub adds a key: found at the first fetch allowed, not before.
      const next = signingKey("k2");
      keys.publish([github, next]);
      time.advance(MINUTE - 1);
      expect(await ok(next)).toBe(401);
      expect(keys.fetches()).toBe(fetched + 1);
      time.advance(1);
      expect(await ok(next)).toBe(200);
      expect(keys.fetches()).toBe(fetched + 2);
      expect(await ok(next)).toBe(200);
      expect(await ok(github)).toBe(200);
      expect(keys.fetches()).toBe(fetched + 2);
    });

    it("down: keys already read still verify; an identifier not known is 503, not 401, and GitHub's API is asked once a minute", async () => {
      const key = await provision("list-down");
      keys.failing(true);
      try {
        time.advance(MINUTE);
        const before = keys.fetches();
        expect((await githubReport(svc, githubEntries(key.keyId), github)).status).toBe(200);
        for (let i = 0; i < 3; i++) expectError(await githubReport(svc, githubEntries(key.keyId), signingKey("k3")), 503, "unavailable");
        expect(keys.fetches()).toBe(before + 1);
      } finally {
        keys.failing(false);
      }
      time.advance(MINUTE);
      expectError(await githubReport(svc, githubEntries(key.keyId), signingKey("k3")), 401, "unauthorized");
    });
  });

  describe("sizes", () => {
    const tokens = (n: number) => Array.from({ length: n }, (_, i) => `XI${i.toString(16).toUpperCase().padStart(32, "0")}`);

    it("takes 1,000 tokens and a body over 16 KiB; 1,001 tokens is 413 and nothing is acted on", async () => {
      const key = await provision("in-a-crowd");
      const thousand = githubEntries(key.keyId, ...tokens(999));
      expect(Buffer.byteLength(thousand)).toBeGreaterThan(16 * 1024);
      const res = await githubReport(svc, thousand, github);
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(1000);
      expect((res.body as { label: string }[]).filter((a) => a.label === "true_positive")).toHaveLength(1);

      const other = await provision("in-a-larger-crowd");
      expectError(await githubReport(svc, githubEntries(other.keyId, ...tokens(1000)), github), 413, "payload_too_large");
      await untouched(other);
      const admin = await svc.admin.post("/admin/leaks", { tokens: [other.keyId, ...tokens(1000)] });
      expectError(admin, 413, "payload_too_large");
      await untouched(other);
      expect((await svc.admin.post("/admin/leaks", { tokens: tokens(1000) })).status).toBe(200);
    });

    it("refuses a body over 1 MiB with 413, on both paths", async () => {
      const big = JSON.stringify([{ token: "x".repeat(1024 * 1024) }]);
      const github413 = await githubReport(svc, big, github);
      expectError(github413, 413, "payload_too_large");
      expect((github413.body as { message: string }).message).toMatch(/1 MiB/);
      expectError(await svc.admin.post("/admin/leaks", { tokens: ["x".repeat(1024 * 1024)] }), 413, "payload_too_large");
      // Elsewhere the limit is still 16 KiB.
      expectError(await svc.admin.post("/admin/customers", { name: "x".repeat(17 * 1024) }), 413, "payload_too_large");
    });

    it("answers Expect: 100-continue by the path's limit", { timeout: 5_000 }, async () => {
      const head = (length: number) => [
        "POST /admin/leaks HTTP/1.1", "Host: keyplane", "Content-Type: application/json", `Authorization: Bearer ${svc.adminToken}`,
        `Content-Length: ${length}`, "Expect: 100-continue", "Connection: close", "", "",
      ].join("\r\n");
      const over = await connect(http.url);
      over.socket.write(head(1024 * 1024 + 1));
      const refused = parseResponses(await over.closed);
      expect(refused.map((r) => r.status)).toEqual([413]);

      const body = JSON.stringify({ tokens: tokens(900) });
      expect(Buffer.byteLength(body)).toBeGreaterThan(16 * 1024);
      const within = await connect(http.url);
      within.socket.write(head(Buffer.byteLength(body)));
      await within.until((data) => data.includes("\r\n\r\n"));
      expect(within.received().toString("latin1")).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
      within.socket.write(body);
      const answered = parseResponses(await within.closed);
      expect(answered.map((r) => r.status)).toEqual([100, 200]);
    });
  });

  describe("bad input never answers 500", () => {
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const odd = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 20 }), fc.constantFrom("\u0000", "\uD800", "x".repeat(5000)), anyJson);
    const entry = fc.record({ token: odd, type: odd, url: odd, source: odd, extra: anyJson }, { requiredKeys: [] });
    const reportBody = fc.oneof(fc.array(entry, { maxLength: 4 }), anyJson, fc.array(anyJson, { maxLength: 3 })).map((v) => JSON.stringify(v) ?? "null");
    const allowed = (status: number, body: unknown, statuses: number[]) => {
      expect(statuses, JSON.stringify(body)).toContain(status);
      if (status !== 200) expect(body).toMatchObject({ status, error: expect.any(String), message: expect.any(String) });
    };

    it("GitHub's path, signed: 200 with a label each, or 400", async () => {
      await fc.assert(fc.asyncProperty(reportBody, async (body) => {
        const res = await githubReport(svc, body, github);
        allowed(res.status, res.body, [200, 400]);
        if (res.status === 200) expect(res.body).toHaveLength((JSON.parse(body) as unknown[]).length);
      }), { numRuns: 60 });
    });

    it("GitHub's path, unsigned or signed wrong: 401 whatever the bytes", async () => {
      const bytes = fc.oneof(reportBody, fc.string({ unit: "binary", maxLength: 200 }), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString("latin1")));
      await fc.assert(fc.asyncProperty(bytes, fc.constantFrom("missing", "stranger", "garbage"), async (body, how) => {
        const headers = how === "missing" ? { "Github-Public-Key-Signature": undefined }
          : how === "stranger" ? { "Github-Public-Key-Signature": signature(body, stranger) }
          : { "Github-Public-Key-Signature": "MEUCIQ==" };
        const res = await githubReport(svc, body, github, headers);
        allowed(res.status, res.body, [401]);
      }), { numRuns: 60 });
    });

    it("the admin's path: 200 with a label each, or 400", async () => {
      const adminBody = fc.oneof(fc.record({ tokens: fc.oneof(fc.array(odd, { maxLength: 4 }), anyJson), url: odd, source: odd }, { requiredKeys: [] }), anyJson);
      await fc.assert(fc.asyncProperty(adminBody, async (body) => {
        const res = await svc.admin.post("/admin/leaks", body as object).set("Content-Type", "application/json");
        allowed(res.status, res.body, [200, 400]);
      }), { numRuns: 60 });
    });
  });
});
