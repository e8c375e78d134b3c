import type { V1PodSpec } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { restartedAt, restartPatch, restartsFor, rolledOut, usesSecret, type Workload } from "./workloads.ts";

const container = (extra: object = {}) => ({ name: "app", image: "app", ...extra });

describe("usesSecret", () => {
  const cases: [string, V1PodSpec, boolean][] = [
    ["an env var's secretKeyRef", { containers: [container({ env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: "billing", key: "apiKey" } } }] })] }, true],
    ["envFrom's secretRef", { containers: [container({ envFrom: [{ secretRef: { name: "billing" } }] })] }, true],
    ["a secret volume", { containers: [container()], volumes: [{ name: "key", secret: { secretName: "billing" } }] }, true],
    ["a projected volume's secret source", { containers: [container()], volumes: [{ name: "key", projected: { sources: [{ configMap: { name: "x" } }, { secret: { name: "billing" } }] } }] }, true],
    ["an init container's env var", { containers: [container()], initContainers: [container({ env: [{ name: "K", valueFrom: { secretKeyRef: { name: "billing", key: "apiKey" } } }] })] }, true],
    ["another Secret in every way", {
      containers: [container({ env: [{ name: "K", valueFrom: { secretKeyRef: { name: "billing-old", key: "apiKey" } } }], envFrom: [{ secretRef: { name: "other" } }, { configMapRef: { name: "billing" } }] })],
      volumes: [{ name: "a", secret: { secretName: "billing2" } }, { name: "b", configMap: { name: "billing" } }, { name: "c", projected: { sources: [{ configMap: { name: "billing" } }] } }],
    }, false],
    ["a plain env value that mentions it", { containers: [container({ env: [{ name: "SECRET", value: "billing" }] })] }, false],
  ];
  it.each(cases)("%s: %s", (_, pod, expected) => expect(usesSecret(pod, "billing")).toBe(expected));
  it("is false without a pod spec", () => expect(usesSecret(undefined, "billing")).toBe(false));
});

describe("rolledOut", () => {
  const deployment = (generation: number, spec: object, status: object | undefined): Workload => ({
    kind: "Deployment", object: { metadata: { generation }, spec: { selector: {}, template: {}, ...spec }, status },
  });
  const statefulSet = (generation: number, spec: object, status: object | undefined): Workload => ({
    kind: "StatefulSet", object: { metadata: { generation }, spec: { selector: {}, serviceName: "s", template: {}, ...spec }, status: status as never },
  });
  const daemonSet = (generation: number, status: object | undefined): Workload => ({
    kind: "DaemonSet", object: { metadata: { generation }, spec: { selector: {}, template: {} }, status: status as never },
  });
  const cases: [string, Workload, boolean][] = [
    ["a Deployment of 0 replicas whose controller saw the new template", deployment(2, { replicas: 0 }, { observedGeneration: 2 }), true],
    ["a Deployment whose controller has not seen the new generation", deployment(3, { replicas: 0 }, { observedGeneration: 2 }), false],
    ["a Deployment with no status yet", deployment(1, { replicas: 0 }, undefined), false],
    ["a Deployment with its replicas all updated and available", deployment(2, { replicas: 3 }, { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3 }), true],
    ["a Deployment with old replicas still running", deployment(2, { replicas: 3 }, { observedGeneration: 2, replicas: 4, updatedReplicas: 3, availableReplicas: 3 }), false],
    ["a Deployment whose new pod never becomes available", deployment(2, { replicas: 1 }, { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 0 }), false],
    ["a Deployment with the default one replica not yet updated", deployment(2, {}, { observedGeneration: 2, replicas: 1, updatedReplicas: 0, availableReplicas: 1 }), false],
    ["a StatefulSet of 0 replicas at the new generation", statefulSet(2, { replicas: 0 }, { observedGeneration: 2, replicas: 0 }), true],
    ["a StatefulSet updated and ready on the new revision", statefulSet(2, { replicas: 2 }, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, currentRevision: "b", updateRevision: "b" }), true],
    ["a StatefulSet still on the old revision", statefulSet(2, { replicas: 2 }, { observedGeneration: 2, replicas: 2, updatedReplicas: 1, readyReplicas: 2, currentRevision: "a", updateRevision: "b" }), false],
    ["an OnDelete StatefulSet whose pods were not replaced", statefulSet(2, { replicas: 1, updateStrategy: { type: "OnDelete" } }, { observedGeneration: 2, replicas: 1, readyReplicas: 1, currentRevision: "a", updateRevision: "b" }), false],
    ["a DaemonSet on no nodes at the new generation", daemonSet(2, { observedGeneration: 2, desiredNumberScheduled: 0, currentNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 }), true],
    ["a DaemonSet with a node still on the old pod", daemonSet(2, { observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 1, numberAvailable: 2, currentNumberScheduled: 2, numberMisscheduled: 0, numberReady: 2 }), false],
    ["a DaemonSet updated and available everywhere", daemonSet(2, { observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, currentNumberScheduled: 2, numberMisscheduled: 0, numberReady: 2 }), true],
  ];
  it.each(cases)("%s: %s", (_, workload, expected) => expect(rolledOut(workload)).toBe(expected));
});

describe("the restart marker", () => {
  it("is a pod-template annotation, read back as written", () => {
    const patch = restartPatch("2026-11-23T10:00:00Z") as { spec: { template: object } };
    const workload: Workload = { kind: "Deployment", object: { spec: { selector: {}, template: patch.spec.template } } };
    expect(restartedAt(workload.object)).toBe("2026-11-23T10:00:00Z");
    expect(restartedAt({ spec: { selector: {}, template: {} } })).toBeUndefined();
  });
});

describe("restartsFor", () => {
  const deployment = (name: string, secret: string, marker?: string, observedGeneration = 2): Workload => ({
    kind: "Deployment",
    object: {
      metadata: { name, generation: 2 },
      spec: {
        replicas: 0, selector: {},
        template: { metadata: { annotations: marker ? { "keyplane.dev/restartedAt": marker } : {} }, spec: { containers: [container({ envFrom: [{ secretRef: { name: secret } }] })] } },
      },
      status: { observedGeneration },
    },
  });
  const names = (ws: Workload[]) => ws.map((w) => w.object.metadata?.name);

  it("has the workloads that read the Secret restarted once each, and waits for those rolling out", () => {
    const restarts = restartsFor([
      deployment("fresh", "billing"),
      deployment("earlier-rotation", "billing", "2026-11-01T00:00:00Z"),
      deployment("rolling", "billing", "now", 1),
      deployment("rolled", "billing", "now"),
      deployment("other", "payments"),
    ], "billing", "now");
    expect(names(restarts.due)).toEqual(["fresh", "earlier-rotation"]);
    expect(names(restarts.rollingOut)).toEqual(["rolling"]);
  });
});
