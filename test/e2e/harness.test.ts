// Proves the test harness against a real API server: the control plane, the fault proxy, the
// controller manager's garbage collection, and that nothing outlives a control plane.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startControlPlane } from "../support/envtest.ts";
import { describeKube, kubeTarget, useKube } from "../support/kube-suite.ts";
import { describeRequest, FaultProxy } from "../support/fault-proxy.ts";
import { apiStatus, apiStatusCode, createTestNamespace, deleteTestNamespace, installCrds, readCrds, uniqueName, waitFor } from "../support/kube.ts";

const repoCrds = fileURLToPath(new URL("../../crds/", import.meta.url));
const envtestModule = new URL("../support/envtest.ts", import.meta.url);

describe("kubeTarget", () => {
  const assets = "/nonexistent/envtest-assets";
  const unbuilt = { KEYPLANE_ENVTEST_CACHE: "/nonexistent/envtest-cache" };
  it.each([
    ["builds the control plane first where it may (root)", unbuilt, true, { kind: "envtest", assets: "/nonexistent/envtest-cache/v1.20.2", build: true }],
    ["skips where it may not build it", unbuilt, false, { kind: "unavailable", fail: false }],
    ["fails where it may not build it under CI", { ...unbuilt, CI: "true" }, false, { kind: "unavailable", fail: true }],
    ["fails when the assets folder lacks the binaries", { KEYPLANE_ENVTEST_ASSETS: assets }, true, { kind: "unavailable", fail: true }],
    ["fails when the kubeconfig does not exist", { KEYPLANE_E2E_KUBECONFIG: "/nonexistent/kubeconfig" }, true, { kind: "unavailable", fail: true }],
    ["uses an existing cluster's kubeconfig", { KEYPLANE_E2E_KUBECONFIG: "/dev/null" }, true, { kind: "existing", kubeconfigPath: "/dev/null" }],
  ])("%s", (_name, env, root, expected) => {
    expect(kubeTarget({ PATH: process.env.PATH, HOME: "/nonexistent", ...env }, root)).toMatchObject(expected);
  });

  it("needs nothing beside the repository: no tracked file names a path outside it", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    // Each `../shared/` or `../.library/` read from its file's folder (the console has a room of its own named shared/).
    const grep = spawnSync("git", ["grep", "-noE", String.raw`(\.\./)+(shared|\.library)/`, "--", ":!test/e2e/harness.test.ts"], { cwd: root, encoding: "utf8" });
    expect(grep.error).toBeUndefined();
    const outside = grep.stdout.split("\n").filter(Boolean).filter((hit) => {
      const [file, , path] = hit.split(":");
      return relative(root, resolve(root, dirname(file!), path!)).startsWith("..");
    });
    expect(outside).toEqual([]);
  });

  it("names the repository's script when it skips", () => {
    const target = kubeTarget({ PATH: process.env.PATH, HOME: "/nonexistent", ...unbuilt }, false);
    expect(target.kind === "unavailable" && target.reason).toMatch(/needs root: run \/.*\/test\/support\/envtest-assets\.sh once as root/);
  });
});

describe("describeRequest", () => {
  it.each([
    ["GET", "/api/v1/namespaces/a/secrets?labelSelector=x%3Dy", "list", "secrets"],
    ["GET", "/api/v1/namespaces/a/secrets?watch=true&resourceVersion=5", "watch", "secrets"],
    ["GET", "/api/v1/watch/namespaces/a/secrets", "watch", "secrets"],
    ["GET", "/api/v1/namespaces/a/secrets/s", "get", "secrets"],
    ["POST", "/api/v1/namespaces/a/events", "create", "events"],
    ["PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "update", "leases"],
    ["PATCH", "/apis/keyplane.dev/v1alpha1/namespaces/a/apikeys/k/status", "patch", "apikeys/status"],
    ["DELETE", "/api/v1/namespaces/a/secrets/s", "delete", "secrets"],
    ["DELETE", "/api/v1/namespaces/a/secrets?labelSelector=x", "deletecollection", "secrets"],
    ["GET", "/api/v1/namespaces/a", "get", "namespaces"],
    ["PUT", "/api/v1/namespaces/a/finalize", "update", "namespaces/finalize"],
    ["GET", "/apis/keyplane.dev/v1alpha1/apikeys?watch=1", "watch", "apikeys"],
    ["GET", "/version", "get", "/version"],
  ])("%s %s is %s %s", (method, path, verb, resource) => {
    expect(describeRequest(method, path)).toMatchObject({ verb, resource });
  });
});

const widgetCrd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.harness.keyplane.dev}
spec:
  group: harness.keyplane.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.size >= 0", message: "size must not be negative"}]
            properties:
              size: {type: integer}
              color: {type: string, default: blue}
          status:
            type: object
            properties:
              ready: {type: boolean}
`;

interface Watching {
  events: Array<{ type: string; object: { metadata?: { name?: string }; code?: number; reason?: string } }>;
  /** Resolves with the error the watch ended with, or null when the stream ended cleanly. */
  ended: Promise<unknown>;
  abort(): void;
}

/** Opens a watch and resolves once its response has arrived (so the stream is open, or already over). */
async function watch(kubeConfig: KubeConfig, path: string, query: Record<string, string> = {}): Promise<Watching> {
  const events: Watching["events"] = [];
  let end: (err: unknown) => void = () => {};
  const ended = new Promise<unknown>((resolve) => (end = resolve));
  const controller = await new Watch(kubeConfig).watch(path, query, (type, object) => events.push({ type, object }), (err) => end(err ?? null));
  return { events, ended, abort: () => controller.abort() };
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms))]);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // Reparented children may linger as zombies until PID 1 reaps them; they run no more.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}

describeKube("envtest harness and fault proxy", () => {
  const kube = useKube({ withControllerManager: true });
  let proxy: FaultProxy;
  let namespace: string;
  let crdDir: string;

  beforeAll(async () => {
    crdDir = await mkdtemp(join(tmpdir(), "harness-crds-"));
    await writeFile(join(crdDir, "widgets.yaml"), widgetCrd);
    proxy = await FaultProxy.start(kube().kubeConfig);
    namespace = await createTestNamespace(kube().kubeConfig, "harness");
  });

  afterAll(async () => {
    await proxy?.close();
    if (namespace) await deleteTestNamespace(kube().kubeConfig, namespace);
    if (crdDir) await rm(crdDir, { recursive: true, force: true });
    await kube().kubeConfig.makeApiClient(ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: "widgets.harness.keyplane.dev" }).catch(() => {});
  });

  beforeEach(() => {
    proxy.clearFaults();
    proxy.resetCounts();
  });

  it("starts an API server in which a Secret can be created and read back", async () => {
    const core = kube().kubeConfig.makeApiClient(CoreV1Api);
    expect((await core.readNamespace({ name: namespace })).status?.phase).toBe("Active");
    const name = uniqueName("roundtrip");
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name, labels: { app: "harness" } }, stringData: { token: "s3cret" } },
    });
    const secret = await core.readNamespacedSecret({ namespace, name });
    expect(secret.metadata?.labels).toEqual({ app: "harness" });
    expect(Buffer.from(secret.data?.token ?? "", "base64").toString()).toBe("s3cret");
  });

  it("installs a CRD through the API and serves it at once, defaults applied", async () => {
    expect(await installCrds(kube().kubeConfig, crdDir)).toEqual(["widgets.harness.keyplane.dev"]);
    const objects = kube().kubeConfig.makeApiClient(CustomObjectsApi);
    const created = await objects.createNamespacedCustomObject({
      group: "harness.keyplane.dev", version: "v1", namespace, plural: "widgets",
      body: { apiVersion: "harness.keyplane.dev/v1", kind: "Widget", metadata: { name: "w1" }, spec: { size: 3 } },
    });
    expect(created.spec).toEqual({ size: 3, color: "blue" });
  });

  it("has installed every CRD of the repository's crds/ folder", async () => {
    const api = kube().kubeConfig.makeApiClient(ApiextensionsV1Api);
    for (const crd of await readCrds(repoCrds)) {
      const current = await api.readCustomResourceDefinition({ name: crd.metadata?.name ?? "" });
      expect(current.status?.conditions).toContainEqual(expect.objectContaining({ type: "Established", status: "True" }));
    }
  });

  it("passes a label-selected watch through the proxy, event by event", async () => {
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    const w = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`, { labelSelector: "app=watched" });
    try {
      await core.createNamespacedSecret({ namespace, body: { metadata: { name: uniqueName("unwatched") } } });
      const watched = uniqueName("watched");
      await core.createNamespacedSecret({ namespace, body: { metadata: { name: watched, labels: { app: "watched" } } } });
      await waitFor(() => w.events.length > 0, { what: "a watch event" });
      expect(w.events.map((e) => [e.type, e.object.metadata?.name])).toEqual([["ADDED", watched]]);
      await core.deleteNamespacedSecret({ namespace, name: watched });
      await waitFor(() => w.events.length > 1, { what: "the DELETED event" });
      expect(w.events[1]?.type).toBe("DELETED");
    } finally {
      w.abort();
    }
  });

  it.each([
    ["reset", "an error"],
    ["end", "a clean end"],
  ] as const)("cuts open watch streams (%s), which the client sees as %s", async (mode, _seenAs) => {
    const w = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`);
    await waitFor(() => proxy.openWatches("secrets") === 1, { what: "the watch to be open at the proxy" });
    expect(proxy.cutWatches({ mode })).toBe(1);
    const err = await within(w.ended, 5_000, "end of the watch");
    if (mode === "reset") expect(err).toBeTruthy();
    else expect(err).toBeNull();
    expect(proxy.openWatches()).toBe(0);
  });

  it("answers the next watch of a resource with an HTTP 410 Gone, then lets watches through", async () => {
    proxy.expireWatches({ resource: "secrets", form: "status" });
    const other = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/configmaps`);
    const expired = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`, { resourceVersion: "1" });
    const again = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`);
    try {
      expect(apiStatusCode(await within(expired.ended, 5_000, "410"))).toBe(410);
      expect(proxy.openWatches("configmaps")).toBe(1);
      expect(proxy.openWatches("secrets")).toBe(1);
    } finally {
      other.abort();
      again.abort();
    }
  });

  it("answers a watch with an in-stream ERROR event carrying 410 Expired, and closes the stream", async () => {
    proxy.expireWatches({ form: "event" });
    const w = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`, { resourceVersion: "1" });
    expect(await within(w.ended, 5_000, "end of the watch")).toBeNull();
    expect(w.events).toEqual([{ type: "ERROR", object: expect.objectContaining({ kind: "Status", code: 410, reason: "Expired" }) }]);
  });

  it.each([
    [409, "Conflict"],
    [500, "InternalError"],
    [429, "TooManyRequests"],
  ] as const)("fails the next write of a resource with %i %s, then lets writes through", async (status, reason) => {
    proxy.failWrites({ status, resource: "secrets", retryAfterSeconds: 2 });
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: uniqueName("unaffected") } } });
    await core.listNamespacedSecret({ namespace });
    const name = uniqueName("faulted");
    const err = await core.createNamespacedSecret({ namespace, body: { metadata: { name } } }).then(() => undefined, (e: unknown) => e);
    expect(apiStatusCode(err)).toBe(status);
    expect(apiStatus(err)).toMatchObject({ kind: "Status", code: status, reason });
    if (status === 429) expect((err as { headers: Record<string, string> }).headers["retry-after"]).toBe("2");
    await core.createNamespacedSecret({ namespace, body: { metadata: { name } } });
    expect(proxy.count("create", "secrets")).toBe(2);
  });

  it("counts the requests it passes by Kubernetes verb and resource", async () => {
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    const objects = proxy.kubeConfig.makeApiClient(CustomObjectsApi);
    const name = uniqueName("counted");
    await core.createNamespacedSecret({ namespace, body: { metadata: { name } } });
    const secret = await core.readNamespacedSecret({ namespace, name });
    await core.listNamespacedSecret({ namespace });
    await core.replaceNamespacedSecret({ namespace, name, body: { ...secret, stringData: { a: "b" } } });
    await core.patchNamespacedSecret({ namespace, name, body: { metadata: { labels: { patched: "yes" } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    await core.deleteNamespacedSecret({ namespace, name });
    await objects.patchNamespacedCustomObjectStatus({
      group: "harness.keyplane.dev", version: "v1", namespace, plural: "widgets", name: "w1", body: { status: { ready: true } },
    }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    const w = await watch(proxy.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`);
    w.abort();

    expect(proxy.counts()).toEqual({
      create: { secrets: 1 },
      get: { secrets: 1 },
      list: { secrets: 1 },
      update: { secrets: 1 },
      patch: { secrets: 1, "widgets/status": 1 },
      delete: { secrets: 1 },
      watch: { secrets: 1 },
    });
    expect(proxy.count("patch")).toBe(2);
    proxy.resetCounts();
    expect(proxy.counts()).toEqual({});
  });

  it("delays the requests it is told to", async () => {
    proxy.delayRequests({ ms: 1_000, times: 1, verb: "list", resource: "secrets" });
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    const timed = async (call: () => Promise<unknown>) => {
      const start = performance.now();
      await call();
      return performance.now() - start;
    };
    expect(await timed(() => core.listNamespacedConfigMap({ namespace }))).toBeLessThan(1_000);
    expect(await timed(() => core.listNamespacedSecret({ namespace }))).toBeGreaterThanOrEqual(1_000);
    expect(await timed(() => core.listNamespacedSecret({ namespace }))).toBeLessThan(1_000);
  });

  it("garbage-collects an owned Secret once its owner is deleted (kube-controller-manager)", async () => {
    const core = kube().kubeConfig.makeApiClient(CoreV1Api);
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: uniqueName("owner") } } });
    const owned = uniqueName("owned");
    const bystander = uniqueName("bystander");
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: owned,
          ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: owner.metadata?.name ?? "", uid: owner.metadata?.uid ?? "" }],
        },
      },
    });
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: bystander } } });
    await core.deleteNamespacedConfigMap({ namespace, name: owner.metadata?.name ?? "" });
    await waitFor(() => core.readNamespacedSecret({ namespace, name: owned }).then(() => false, (e: unknown) => apiStatusCode(e) === 404), {
      timeoutMs: 20_000, what: `Secret ${owned} to be garbage-collected`,
    });
    expect((await core.readNamespacedSecret({ namespace, name: bystander })).metadata?.name).toBe(bystander);
  }, 30_000);

  describe("lifecycle", { skip: kubeTarget().kind !== "envtest" }, () => {
    it("starts in well under 15 s, and stop() leaves no process and no folder behind", async () => {
      const start = performance.now();
      const plane = await startControlPlane({ withControllerManager: true, crdDir: crdDir });
      const startedIn = performance.now() - start;
      const pids = plane.processes.map((p) => p.pid);
      expect(plane.processes.map((p) => p.name)).toEqual(["etcd", "kube-apiserver", "kube-controller-manager"]);
      expect(pids.every(isAlive)).toBe(true);
      await plane.stop();
      expect(pids.filter(isAlive)).toEqual([]);
      expect(existsSync(plane.dir)).toBe(false);
      expect(startedIn).toBeLessThan(15_000);
    }, 60_000);

    it.each([
      ["exits without calling stop()", "process.exit(0)"],
      ["is SIGKILLed", "setInterval(() => {}, 1000)"],
    ])("leaves nothing behind when the test process %s", async (_how, after) => {
      const script = `const { startControlPlane } = await import(${JSON.stringify(envtestModule.href)});
        const plane = await startControlPlane({ withControllerManager: true, crdDir: ${JSON.stringify(crdDir)} });
        console.log(JSON.stringify({ pids: plane.processes.map((p) => p.pid), dir: plane.dir }));
        ${after};`;
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const { pids, dir } = await waitFor(() => output.includes("\n") && (JSON.parse(output) as { pids: number[]; dir: string }), {
        timeoutMs: 30_000, what: "the child's control plane",
      });
      expect(pids).toHaveLength(3);
      if (child.exitCode === null) child.kill("SIGKILL");
      try {
        await waitFor(() => pids.every((pid) => !isAlive(pid)) && !existsSync(dir), { timeoutMs: 10_000, what: "cleanup" });
      } finally {
        // When the harness failed, do not leave its processes to the following tests.
        for (const pid of pids.filter(isAlive)) process.kill(pid, "SIGKILL");
        await rm(dir, { recursive: true, force: true });
      }
    }, 60_000);
  });
});
