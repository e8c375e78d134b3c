import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "../logging.ts";
import { loadConfig } from "../config.ts";
import { startOperator } from "./launch.ts";
import { operatorSettings } from "./start.ts";
import type { KeyStoreNeeds } from "./reconcile/keystore.ts";

const ctx = {} as KeyStoreNeeds;
/** The operator's configuration as keyplane would read it from the (stubbed) environment. */
const configured = (mode: string) => loadConfig({ ...process.env, KEYPLANE_OPERATOR: mode }).operator;
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
    expect(await startOperator(configured("off"), ctx, captureLogger([]))).toBeUndefined();
  });

  it("in auto, stays off where no cluster is configured, and says why", async () => {
    noCluster();
    const logs: string[] = [];
    expect(await startOperator(configured("auto"), ctx, captureLogger(logs))).toBeUndefined();
    expect(logs.join("")).toMatch(/operator off: no Kubernetes cluster configured/);
  });

  it("in auto, stays off where the configured cluster does not answer, and says why", async () => {
    noCluster();
    vi.stubEnv("KUBECONFIG", deadCluster);
    const logs: string[] = [];
    expect(await startOperator(configured("auto"), ctx, captureLogger(logs))).toBeUndefined();
    expect(logs.join("")).toMatch(/operator off: cluster of KUBECONFIG=.*dead-kubeconfig \(https:\/\/127\.0\.0\.1:1\) unusable/);
  });

  it("when on, fails without a cluster, or with one that does not answer", async () => {
    noCluster();
    await expect(startOperator(configured("on"), ctx, captureLogger([]))).rejects.toThrow(/^KEYPLANE_OPERATOR=on but no Kubernetes cluster configured/);
    vi.stubEnv("KUBECONFIG", deadCluster);
    await expect(startOperator(configured("on"), ctx, captureLogger([]))).rejects.toThrow(/^KEYPLANE_OPERATOR=on but the cluster of KUBECONFIG=.* unusable/);
  });
});

describe("operatorSettings", () => {
  it("keeps client-go's proportions: a lease of 15 s renews within 10 s, every 5 s", () => {
    const settings = operatorSettings({ ...configured("on"), leaseDurationMs: 15_000 });
    expect(settings).toMatchObject({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 5_000 });
  });
});
