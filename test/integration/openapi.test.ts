import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "@hey-api/openapi-ts";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import supertest from "supertest";
import { API_EXAMPLES } from "../../src/http/examples.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conformance } from "../support/conformance.ts";
import { startService, type TestService } from "../support/service.ts";

// /openapi.json as client tools see it: the OpenAPI 3.1 schema accepts it (@seriousme/openapi-schema-validator,
// in its strict mode, formats checked), Redocly's recommended rules find no error, every operation has a
// unique id, and a typed client generated from it (@hey-api/openapi-ts) compiles with tsc. That every
// answer of the suites conforms to it is checked by test/support/conformance.ts; that it refuses the
// requests the server refuses, by document-refusals.test.ts.
const run = promisify(execFile);
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");

interface Document {
  paths: Record<string, Record<string, { operationId?: string; parameters?: { $ref?: string }[] } | string>>;
  components: { parameters: Record<string, { description?: string }> };
}

describe("the OpenAPI document", () => {
  let svc: TestService;
  let text: string;
  let doc: Document;
  let scratch: string;

  beforeAll(async () => {
    svc = await startService("pglite");
    const res = await supertest(svc.app).get("/openapi.json");
    text = res.text;
    doc = JSON.parse(text);
    scratch = await mkdtemp(join(tmpdir(), "keyplane-openapi-"));
  });
  afterAll(async () => {
    await svc?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  // Most of it is each operation's list of answers (by $ref); examples are written once, in components.
  // About 2 KB per operation (the key paths are written once per base, their other spellings referred
  // to): webhooks, leaks, policies, credits and usage brought it from 300 KB to 390, usage analytics
  // (a key's on each of the ten bases, with its range query inline) to 446.
  it("is under 470 KB", () => {
    expect(Buffer.byteLength(text)).toBeLessThan(470 * 1024);
  });

  it("is valid OpenAPI 3.1 to a strict validator: every $ref a URI reference, every format as its schema says", async () => {
    // strict "log" is the validator's strictest mode; what ajv's strict mode says of the OpenAPI schema
    // itself (not of this document) is no finding here, so the log is not shown.
    const validator = new Validator({ strict: "log", logger: false });
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("passes Redocly's recommended rules with no error", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: text, absoluteRef: join(scratch, "openapi.json"), config });
    const shown = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`);
    expect(shown.filter((p) => p.startsWith("error"))).toEqual([]);
    // 405 is described once, for the methods no operation takes, so no operation refers to it.
    expect(shown).toEqual(['warn no-unused-components: Component: "MethodNotAllowed" is never used.']);
  });

  it("gives every operation a unique id, and describes every path parameter", () => {
    const operations = Object.values(doc.paths).flatMap((item) => Object.values(item).filter((o) => typeof o === "object"));
    const ids = operations.map((o) => (o as { operationId?: string }).operationId);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(["listKeys", "getSelfKey", "listCustomerKeys", "updateCustomerDomainKey", "createCustomer", "invokeApplication"]));
    for (const p of Object.values(doc.components.parameters)) expect(p.description).toMatch(/\w/);
  });

  it("refers the other spellings (apikeys, tenants) to their path, not a copy, by a pointer a URI fragment may hold", () => {
    expect(doc.paths["/tenants/{customer}/apikeys"]).toEqual({ $ref: "#/paths/~1customers~1%7Bcustomer%7D~1keys" });
    expect(doc.paths["/apikeys/self"]).toEqual({ $ref: "#/paths/~1keys~1self" });
    for (const item of Object.values(doc.paths)) {
      const ref = (item as { $ref?: string }).$ref;
      if (ref === undefined) continue;
      expect(ref, ref).toMatch(/^#(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*$/);
      expect(doc.paths[decodeURIComponent(ref).slice("#/paths/".length).replaceAll("~1", "/").replaceAll("~0", "~")], ref).toBeDefined();
    }
  });

  it("generates a typed client that compiles", { timeout: 60_000 }, async () => {
    const input = join(scratch, "openapi.json");
    await writeFile(input, text);
    await createClient({ input, output: { path: join(scratch, "client") }, plugins: ["@hey-api/client-fetch"], logs: { level: "silent" } } as never);
    await writeFile(join(scratch, "package.json"), '{"type":"module"}');
    await writeFile(join(scratch, "tsconfig.json"), JSON.stringify({
      compilerOptions: { target: "es2024", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, skipLibCheck: true, allowImportingTsExtensions: true, lib: ["es2024", "dom"] },
      include: ["usage.ts", "client"],
    }));
    // A client's use of it: the types must follow the document (a key's keyId is a string, lists are arrays).
    await writeFile(join(scratch, "usage.ts"), `import { createClient } from "./client/client/index.ts";
import { getSelfKey, listCustomerKeys, provisionDomainKey } from "./client/sdk.gen.ts";
const client = createClient({ baseUrl: "http://127.0.0.1:8080", headers: { Authorization: "Bearer XI0123456789ABCDEF0123456789AB7798" } });
const self = await getSelfKey({ client });
export const keyId: string | undefined = self.data?.keyId;
const list = await listCustomerKeys({ client, path: { customer: "acme" }, query: { active: true, limit: 10 } });
export const names: string[] | undefined = list.data?.map((k) => k.name);
await provisionDomainKey({ client, path: { domain: "sip.acme.example" }, body: { name: "billing" } });
`);
    const { stdout } = await run(process.execPath, [TSC, "-p", scratch]).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(stdout).toBe("");
  });

  it("is enforced: the suites' checker refuses an answer that strays from it", () => {
    const checker = new Conformance(doc);
    const answer = (status: number, headers: Record<string, string>) => ({
      statusCode: status,
      getHeader: (name: string) => headers[name.toLowerCase()],
    });
    const id = { "x-request-id": "r1" };
    const key = JSON.stringify(API_EXAMPLES.Key);
    const self = { method: "GET", url: "/keys/self" };
    expect(checker.check(self, answer(200, id), key)).toBeUndefined();
    expect(checker.check({ method: "GET", url: "/apikeys/self?x=1" }, answer(200, id), key)).toBeUndefined();
    expect(checker.check(self, answer(200, id), JSON.stringify({ ...JSON.parse(key), keyId: undefined }))).toMatch(/body: .*keyId/);
    expect(checker.check(self, answer(200, {}), key)).toBe("no X-Request-Id");
    expect(checker.check(self, answer(418, id), "{}")).toMatch(/status 418 is not declared/);
    const refusal = JSON.stringify({ status: 401, error: "unauthorized", message: "no" });
    expect(checker.check(self, answer(401, id), refusal)).toBe("header WWW-Authenticate missing");
    expect(checker.check(self, answer(401, { ...id, "www-authenticate": "Bearer" }), refusal)).toBeUndefined();
    expect(checker.check({ method: "PATCH", url: "/keys/self" }, answer(405, id), refusal)).toBe("405 without Allow");
    expect(checker.check({ method: "GET", url: "/nowhere" }, answer(200, id), "{}")).toMatch(/expected 404/);
  });
});
