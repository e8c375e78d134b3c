// The operator's metrics (docs/operations.md, "Metrics"): reconciles counted by result, ApiKey
// conditions as gauges, and the leader gauge.
import { describe, expect, it } from "vitest";
import { createLogger } from "../logging.ts";
import { Metrics } from "../services/operations/metrics.ts";
import { countedReconcile } from "./controller.ts";
import { LeaderElector, type LeaseApi } from "./kube/leader.ts";

const newMetrics = () => new Metrics({ keyCache: () => ({ hits: 0, misses: 0, queries: 0, stale: 0, size: 0 }), databaseUp: async () => true });

async function sample(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string | number>; metricName?: string }[];
  const found = values.find((v) => (v.metricName ?? name) === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return found?.value;
}

describe("reconciles", () => {
  it("counts done as success, retry as requeue, a throw as error, and times each", async () => {
    const metrics = newMetrics();
    await expect(countedReconcile(metrics, async () => "done")).resolves.toBe("done");
    await expect(countedReconcile(metrics, async () => "retry")).resolves.toBe("retry");
    await expect(countedReconcile(metrics, async () => "retry")).resolves.toBe("retry");
    await expect(countedReconcile(metrics, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await sample(metrics, "keyplane_apikey_reconciles_total", { result: "success" })).toBe(1);
    expect(await sample(metrics, "keyplane_apikey_reconciles_total", { result: "requeue" })).toBe(2);
    expect(await sample(metrics, "keyplane_apikey_reconciles_total", { result: "error" })).toBe(1);
    const text = await metrics.text();
    expect(text).toContain("keyplane_apikey_reconcile_duration_seconds_count 4");
  });
});

describe("ApiKey conditions", () => {
  it("sets 1 for each True condition and 0 otherwise, and removes an ApiKey that is gone", async () => {
    const metrics = newMetrics();
    metrics.readyStatus("team-a", "billing", [{ type: "Ready", status: "False" }, { type: "Stalled", status: "True" }]);
    const at = (condition: string) => sample(metrics, "keyplane_apikey_ready_status", { namespace: "team-a", name: "billing", condition });
    expect([await at("Ready"), await at("Reconciling"), await at("Stalled")]).toEqual([0, 0, 1]);
    metrics.readyStatus("team-a", "billing", [{ type: "Ready", status: "True" }]);
    expect([await at("Ready"), await at("Reconciling"), await at("Stalled")]).toEqual([1, 0, 0]);
    metrics.readyStatus("team-a", "billing", undefined);
    expect(await at("Ready")).toBeUndefined();
    metrics.readyStatus("team-a", "ivr", []);
    metrics.forgetReadyStatus();
    expect(await sample(metrics, "keyplane_apikey_ready_status")).toBeUndefined();
  });
});

describe("leadership", () => {
  it("is 1 while this replica leads and 0 once it has stopped", async () => {
    const metrics = newMetrics();
    let lease: Awaited<ReturnType<LeaseApi["read"]>> | undefined;
    const leases: LeaseApi = {
      read: async () => {
        if (!lease) throw Object.assign(new Error("not found"), { statusCode: 404 });
        return lease;
      },
      create: async (_namespace, body) => (lease = { ...body, metadata: { ...body.metadata, resourceVersion: "1" } }),
      replace: async (_namespace, _name, body) => (lease = { ...body, metadata: { ...body.metadata, resourceVersion: String(Number(lease?.metadata?.resourceVersion ?? 0) + 1) } }),
    };
    const elector = new LeaderElector({ leases, namespace: "ns", name: "keyplane-operator", identity: "a", leaseDurationMs: 15_000, renewDeadlineMs: 10_000,
      retryPeriodMs: 5_000, log: createLogger({ level: "silent" }), metrics });
    expect(await sample(metrics, "keyplane_operator_leader")).toBe(0);
    const led = new Promise<void>((resolve) => elector.run({ onStartedLeading: () => resolve(), onStoppedLeading: () => undefined }));
    await led;
    expect(await sample(metrics, "keyplane_operator_leader")).toBe(1);
    await elector.stop();
    expect(await sample(metrics, "keyplane_operator_leader")).toBe(0);
  });
});
