// Two `keyplane serve` processes over one PostgreSQL database and one cluster: both serve REST, one
// reconciles, and when it is killed (SIGKILL: no goodbye) the other takes over.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { DEFAULTS } from "../../src/operator/start.ts";
import { createPostgresDatabase } from "../support/databases.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { bindsCustomers, Cluster } from "./operator-fixture.ts";

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

interface Replica {
  name: string;
  url: string;
  child: ChildProcess;
  output: string[];
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describeKube("operator failover between keyplane processes", () => {
  const kube = useKube({ withControllerManager: false });
  const postgres = inject("postgresUrl");
  const replicas: Replica[] = [];
  let database: { url: string; drop(): Promise<void> } | undefined;
  let dataDir: string;
  let namespace: string;
  let k: Cluster;
  const adminToken = `kpa_${randomBytes(24).toString("hex")}`;
  const masterKey = randomBytes(32).toString("hex");

  async function startReplica(name: string): Promise<Replica> {
    const port = await freePort();
    const env = {
      PATH: process.env.PATH,
      HOME: dataDir,
      HOST: "127.0.0.1",
      PORT: String(port),
      DATABASE_URL: database?.url,
      KEYPLANE_MASTER_KEY: masterKey,
      KEYPLANE_ADMIN_TOKEN: adminToken,
      KEYPLANE_DATA_DIR: join(dataDir, name),
      KEYPLANE_OPERATOR: "on",
      KUBECONFIG: kube().kubeconfigPath,
      KEYPLANE_LEASE_NAMESPACE: namespace,
      KEYPLANE_WATCH_NAMESPACE: namespace,
      KEYPLANE_LEASE_DURATION_SECONDS: "3",
      POD_NAME: name,
      LOG_LEVEL: "info",
    };
    const child = spawn(process.execPath, [main, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    const replica: Replica = { name, url: `http://127.0.0.1:${port}`, child, output: [] };
    child.stdout?.on("data", (chunk: Buffer) => replica.output.push(chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => replica.output.push(chunk.toString()));
    replicas.push(replica);
    await waitFor(async () => (await fetch(`${replica.url}/readyz`)).ok, { timeoutMs: 30_000, what: `replica ${name} to be ready` })
      .catch((error: unknown) => {
        throw new Error(`${String(error)}\n${replica.output.join("")}`);
      });
    return replica;
  }

  const admin = (replica: Replica, path: string, body: object) =>
    fetch(`${replica.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const self = async (replica: Replica, token: string | undefined) =>
    (await fetch(`${replica.url}/keys/self`, { headers: { authorization: `Bearer ${token}` } })).status;
  const holder = async () =>
    (await kube().kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace, name: DEFAULTS.leaseName }).catch(() => undefined))?.spec?.holderIdentity;
  /** Which replicas logged that they wrote `secret`. */
  const writers = (secret: string) => replicas.filter((r) => r.output.join("").includes(`Created Secret ${namespace}/${secret}`)).map((r) => r.name);

  beforeAll(async () => {
    if (!postgres) return;
    database = await createPostgresDatabase();
    dataDir = await mkdtemp(join(tmpdir(), "keyplane-failover-"));
    namespace = await createTestNamespace(kube().kubeConfig, "failover", bindsCustomers("acme"));
    k = new Cluster(kube().kubeConfig, namespace);
  });

  afterAll(async () => {
    for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (namespace) await deleteTestNamespace(kube().kubeConfig, namespace);
  });

  it.skipIf(!postgres)("one process reconciles, both serve REST, and the other takes over when the first is killed", async () => {
    const a = await startReplica("replica-a");
    await waitFor(async () => (await holder()) === "replica-a", { timeoutMs: 15_000, what: "replica-a to lead" });
    const b = await startReplica("replica-b");
    expect((await admin(b, "/admin/customers", { name: "acme" })).status).toBe(201);

    await k.createApiKey("before", { customer: "acme" });
    await k.waitReady("before");
    const before = await k.token("before");
    expect(await self(a, before)).toBe(200);
    expect(await self(b, before)).toBe(200);
    expect(writers("before")).toEqual(["replica-a"]);
    expect(await holder()).toBe("replica-a");

    a.child.kill("SIGKILL");
    const killedAt = performance.now();
    await waitFor(async () => (await holder()) === "replica-b", { timeoutMs: 20_000, intervalMs: 100, what: "replica-b to take over" });
    const takeover = performance.now() - killedAt;

    await k.createApiKey("after", { customer: "acme" });
    await k.waitReady("after", 20_000);
    expect(await self(b, await k.token("after"))).toBe(200);
    expect(writers("after")).toEqual(["replica-b"]);
    // The key that replica-a made is still there, and replica-b reconciles it too.
    await k.core.deleteNamespacedSecret({ namespace, name: "before" });
    await waitFor(async () => (await k.token("before")) === before, { timeoutMs: 10_000, what: "replica-b to restore the Secret" });
    console.log(`[failover] replica-b led ${Math.round(takeover)} ms after replica-a was killed (lease 3 s)`);
    expect(takeover).toBeLessThan(10_000);
  }, 90_000);
});
