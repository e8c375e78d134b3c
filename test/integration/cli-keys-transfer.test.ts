import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { progressLine } from "../../src/cli/keys-transfer.ts";
import { cliJson, expectCliFailure, runCli } from "../support/cli.ts";
import { startService, type TestService } from "../support/service.ts";
import { ndjson, token } from "../support/import.ts";

// `keyplane keys import FILE` and `keyplane keys export`, as a user runs them: the real command in its
// own process, against a real server, with the admin token.
describe("keyplane keys import and export", () => {
  let svc: TestService;
  let server: Server;
  let url: string;
  const keyplane = (args: string[], env: Record<string, string | undefined> = {}) =>
    runCli(["keys", ...args], { KEYPLANE_URL: url, KEYPLANE_TOKEN: svc.adminToken, ...env });

  beforeAll(async () => {
    svc = await startService("pglite");
    server = createServer(svc.app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await svc?.stop();
  });

  it("imports a file, prints each refused line and the summary, and exports what it imported", async () => {
    const file = join(tmpdir(), `keyplane-import-${process.pid}.ndjson`);
    const [a, b] = [token(), token()];
    await writeFile(file, ndjson([
      { customer: "acme", name: "a", keyId: a },
      { customer: "acme", domain: "sip.acme.example", name: "b", keyId: b },
      { customer: "acme", name: "a", keyId: token() },
    ]));
    const run = await keyplane(["import", file, "--create-directory"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(""); // not a terminal: no progress line
    expect(run.stdout).toBe(`line 3: conflict: A key named "a" already exists in this scope with another token.\ncreated 2, updated 0, unchanged 0, conflict 1, invalid 0\n`);
    expect(cliJson(await keyplane(["import", file, "-o", "json"]))).toEqual({ created: 0, updated: 0, unchanged: 2, conflict: 1, invalid: 0 });

    const exported = await keyplane(["export", "--customer", "acme"]);
    expect(exported.code).toBe(0);
    const keys = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { keyId: string });
    expect(keys.map((k) => k.keyId)).toEqual([a, b]);
    const narrowed = await keyplane(["export", "--customer", "acme", "--domain", "sip.acme.example"]);
    expect(narrowed.stdout.trim().split("\n")).toHaveLength(1);
  });

  it("fails in one line for a key's token, a missing file, or no token", async () => {
    const [a] = [token()];
    const file = join(tmpdir(), `keyplane-import-key-${process.pid}.ndjson`);
    await writeFile(file, ndjson([{ customer: "acme", name: "k", keyId: a }]));
    expectCliFailure(await keyplane(["import", file], { KEYPLANE_TOKEN: a }), /\(401 unauthorized\)$/);
    expectCliFailure(await keyplane(["import", join(tmpdir(), "no-such-file.ndjson")]), /^keyplane: cannot read /);
    expectCliFailure(await keyplane(["export"], { KEYPLANE_TOKEN: undefined }), /KEYPLANE_TOKEN is not set/);
  });

  it("the progress line says keys done, keys a second and the time left", () => {
    expect(progressLine(12_000, 2, 0.25)).toBe("12,000 keys · 6,000 keys/s · 6s left");
    expect(progressLine(300_000, 30, 0.5)).toBe("300,000 keys · 10,000 keys/s · 30s left");
    expect(progressLine(90_000, 30, 0.25)).toBe("90,000 keys · 3,000 keys/s · 1m30s left");
    expect(progressLine(5_000, 1, undefined)).toBe("5,000 keys · 5,000 keys/s");
  });
});
