import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess } from "../support/process.ts";

// The embedded default, as a user meets it: `keyplane serve` with no DATABASE_URL keeps its database
// and secrets in the data dir, across restarts; SIGTERM lets requests in flight finish.
describe("keyplane serve on the embedded database", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "keyplane-embedded-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> });

  it("keeps customers and keys across a restart, and shows the generated admin token once, and where it is on every later start", { timeout: 60_000 }, async () => {
    const first = await startServerProcess({ KEYPLANE_DATA_DIR: dataDir });
    const adminToken = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
    expect(first.stdout()).toContain(adminToken);
    expect((await stat(join(dataDir, "admin-token"))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, "master-key"))).mode & 0o777).toBe(0o600);
    const admin = { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" };
    expect((await fetch(`${first.url}/admin/customers`, { method: "POST", headers: admin, body: '{"name":"acme"}' })).status).toBe(201);
    const key = await json(await fetch(`${first.url}/admin/customers/acme/keys`, { method: "POST", headers: admin, body: '{"name":"root"}' }));
    expect(key.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await startServerProcess({ KEYPLANE_DATA_DIR: dataDir });
    try {
      expect(second.stdout()).not.toContain(adminToken);
      expect(second.stdout()).toContain(`admin token: kept in ${join(dataDir, "admin-token")}`);
      const self = await json(await fetch(`${second.url}/keys/self`, { headers: { Authorization: `Bearer ${key.body.keyId}` } }));
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ keyId: key.body.keyId, name: "root", tenant: { name: "acme" } });
      expect((await fetch(`${second.url}/admin/customers/acme`, { headers: admin })).status).toBe(200);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it("finishes a request in flight on SIGTERM, then exits 0", { timeout: 60_000 }, async () => {
    // The application holds its answer until keyplane has begun to stop: the request is in flight then.
    let received!: () => void;
    const inApplication = new Promise<void>((resolve) => (received = resolve));
    let answer!: () => void;
    const stopping = new Promise<void>((resolve) => (answer = resolve));
    const voice = createServer((_req, res) => {
      received();
      void stopping.then(() => res.end('{"answered":true}'));
    });
    await new Promise<void>((resolve) => voice.listen(0, "127.0.0.1", resolve));
    const server = await startServerProcess({ KEYPLANE_DATA_DIR: dataDir });
    try {
      const adminToken = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
      const admin = { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" };
      const base = `${server.url}/admin/customers/acme/domains`;
      await fetch(base, { method: "POST", headers: admin, body: '{"domain":"sip.acme.example"}' });
      const url = `http://127.0.0.1:${(voice.address() as AddressInfo).port}/`;
      await fetch(`${base}/sip.acme.example/applications`, { method: "POST", headers: admin, body: JSON.stringify({ name: "slow", url }) });
      const inFlight = fetch(`${base}/sip.acme.example/applications/slow/invoke`, { method: "POST", headers: admin, body: "{}" });
      await inApplication;
      const exited = server.stop();
      await expect.poll(() => server.stdout().includes("stopping: finishing requests in flight")).toBe(true);
      answer();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ answered: true });
      expect(await exited).toBe(0);
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    } finally {
      voice.close();
      await server.stop();
    }
  });

  it("refuses to start on a bad configuration, saying why", async () => {
    await expect(startServerProcess({ KEYPLANE_DATA_DIR: dataDir, KEYPLANE_ADMIN_TOKEN: "short" }, 10_000)).rejects.toThrow(/at least 32 characters/);
    await expect(startServerProcess({ KEYPLANE_DATA_DIR: dataDir, DATABASE_URL: "postgres://127.0.0.1:1/x" }, 10_000)).rejects.toThrow(
      /KEYPLANE_MASTER_KEY is required/,
    );
  });
});
