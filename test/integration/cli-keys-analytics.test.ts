import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliJson, expectCliFailure, runCli } from "../support/cli.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// `keyplane keys analytics` as a user runs it: the real command in its own process, against a real
// server whose counts the test made.

describe("keyplane keys analytics", () => {
  let svc: TestService;
  let server: Server;
  let url: string;
  let acme: Tenant;
  let billing: { id: number; keyId: string };

  const keyplane = (args: string[]) => runCli(["keys", "analytics", ...args], { KEYPLANE_URL: url, KEYPLANE_TOKEN: acme.keys.customer });
  const today = () => new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    svc = await startService("pglite");
    acme = await createTenant(svc, "acme");
    server = createServer(svc.app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    billing = (await svc.as(acme.keys.customer).post("/keys", { name: "billing", policy: { credits: { remaining: 100 } } })).body as { id: number; keyId: string };
    for (let i = 0; i < 3; i++) await supertest(svc.app).post("/verify").send({ key: billing.keyId, cost: 2 }).expect(200);
    await supertest(svc.app).post("/verify").send({ key: billing.keyId, path: "/customers/globex/calls" }).expect(200);
    await svc.analytics.write();
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await svc?.stop();
  });

  it("shows a key's days as a table, one row per bucket", async () => {
    const run = await keyplane([String(billing.id), "--interval", "day", "--from", `${today()}T00:00:00Z`]);
    expect(run.code, run.stderr).toBe(0);
    const [header, ...rows] = run.stdout.trim().split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["START", "VALID", "RESTRICTED", "RATE LIMITED", "USAGE EXCEEDED", "FORBIDDEN", "DISABLED", "EXPIRED", "CREDITS"]);
    expect(rows.map((r) => r.split(/\s{2,}/))).toEqual([[`${today()}T00:00:00.000Z`, "3", "0", "0", "0", "1", "0", "0", "6"]]);
  });

  it("shows the scope's buckets and its most used keys without KEY, and the API's JSON with -o json", async () => {
    const run = await keyplane(["--top", "1"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n").filter((l) => /^\d{4}-/.test(l))).toHaveLength(25);
    expect(run.stdout).toMatch(/most used keys:\nID\s+NAME\s+REQUESTS/);
    expect(run.stdout).toMatch(new RegExp(`\\n${billing.id}\\s+billing\\s+4\\s+3\\s`));
    const json = cliJson(await keyplane(["--interval", "day", "--from", `${today()}T00:00:00Z`, "-o", "json"])) as { top: { name: string; requests: number }[] };
    expect(json.top).toEqual([expect.objectContaining({ name: "billing", requests: 4, valid: 3, forbidden: 1, credits: 6 })]);
  });

  it("says in one line what the server refused", async () => {
    expectCliFailure(await keyplane([String(billing.id), "--interval", "week"]), /interval.*\(400 bad_request\)/);
    expectCliFailure(await keyplane([String(billing.id), "--top", "3"]), /--top lists a scope's keys/);
  });
});
