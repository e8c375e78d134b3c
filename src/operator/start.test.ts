import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Context } from "../services/context.ts";
import { createLogger } from "../logging.ts";
import { clusterConfigured, operatorSettings, startOperator } from "./start.ts";

const ctx = {} as Context;
const captureLogger = (lines: string[]) => createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(line) } });

describe("startOperator", () => {
  let home: string;
  let deadCluster: string;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "keyplane-start-"));
    deadCluster = join(home, "dead-kubeconfig");
    // Port 1 on the loopback: nothing listens, the connection is refused at once.
    await writeFile(deadCluster, `apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: dead, user: {token: x}}]
contexts: [{name: dead, context: {cluster: dead, user: dead}}]
current-context: dead
`);
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  /** No KUBECONFIG, an empty home, not in a pod. */
  function noCluster() {
    vi.stubEnv("KUBECONFIG", undefined);
    vi.stubEnv("HOME", home);
    vi.stubEnv("KUBERNETES_SERVICE_HOST", undefined);
  }

  it("starts nothing when off", async () => {
    expect(await startOperator("off", ctx, captureLogger([]))).toBeUndefined();
  });

  it("in auto, stays off where no cluster is configured, and says why", async () => {
    noCluster();
    const logs: string[] = [];
    expect(await startOperator("auto", ctx, captureLogger(logs))).toBeUndefined();
    expect(logs.join("")).toMatch(/operator off: no Kubernetes cluster configured/);
  });

  it("in auto, stays off where the configured cluster does not answer, and says why", async () => {
    noCluster();
    vi.stubEnv("KUBECONFIG", deadCluster);
    const logs: string[] = [];
    expect(await startOperator("auto", ctx, captureLogger(logs))).toBeUndefined();
    expect(logs.join("")).toMatch(/operator off: cluster of KUBECONFIG=.*dead-kubeconfig \(https:\/\/127\.0\.0\.1:1\) unusable/);
  });

  it("when on, fails without a cluster, or with one that does not answer", async () => {
    noCluster();
    await expect(startOperator("on", ctx, captureLogger([]))).rejects.toThrow(/^KEYPLANE_OPERATOR=on but no Kubernetes cluster configured/);
    vi.stubEnv("KUBECONFIG", deadCluster);
    await expect(startOperator("on", ctx, captureLogger([]))).rejects.toThrow(/^KEYPLANE_OPERATOR=on but the cluster of KUBECONFIG=.* unusable/);
  });
});

describe("clusterConfigured", () => {
  it.each([
    ["a KUBECONFIG", { KUBECONFIG: "/etc/k" }, "KUBECONFIG=/etc/k"],
    ["nothing", { HOME: "/nonexistent" }, undefined],
    ["a service host without a service account token", { HOME: "/nonexistent", KUBERNETES_SERVICE_HOST: "10.0.0.1" }, undefined],
  ])("sees %s", (_what, env, expected) => {
    expect(clusterConfigured(env)).toBe(expected);
  });
});

describe("operatorSettings", () => {
  it.each([
    ["defaults", {}, { leaseNamespace: "default", watchNamespace: undefined, resyncMs: undefined }],
    ["the pod's namespace for the Lease", { POD_NAMESPACE: "keyplane-system" }, { leaseNamespace: "keyplane-system" }],
    ["KEYPLANE_LEASE_NAMESPACE over the pod's", { POD_NAMESPACE: "a", KEYPLANE_LEASE_NAMESPACE: "b" }, { leaseNamespace: "b" }],
    ["the pod's name as identity", { POD_NAME: "keyplane-7d9f-x2" }, { identity: "keyplane-7d9f-x2" }],
    ["one namespace to watch", { KEYPLANE_WATCH_NAMESPACE: "team-a" }, { watchNamespace: "team-a" }],
    ["a lease of 15 s: renew deadline 10 s, renewals every 5 s", { KEYPLANE_LEASE_DURATION_SECONDS: "15" },
      { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 5_000 }],
    ["a resync period", { KEYPLANE_RESYNC_SECONDS: "30" }, { resyncMs: 30_000 }],
  ])("reads %s", (_what, env, expected) => {
    expect(operatorSettings(env)).toMatchObject(expected);
  });

  it("names the host and process without a pod name", () => {
    expect(operatorSettings({}).identity).toMatch(new RegExp(`-${process.pid}$`));
  });

  it("refuses a lease duration that is not a positive number", () => {
    expect(() => operatorSettings({ KEYPLANE_LEASE_DURATION_SECONDS: "soon" })).toThrow(/KEYPLANE_LEASE_DURATION_SECONDS/);
  });
});
