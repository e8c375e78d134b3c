// The workloads a rotation restarts, and when a restart has rolled out (docs/operator.md, "Rotation").
// Pure: the operator's informers hold the Deployments, StatefulSets and DaemonSets, and these decide.
import type { V1DaemonSet, V1Deployment, V1PodSpec, V1StatefulSet } from "@kubernetes/client-node";

export type Workload =
  | { kind: "Deployment"; object: V1Deployment }
  | { kind: "StatefulSet"; object: V1StatefulSet }
  | { kind: "DaemonSet"; object: V1DaemonSet };

/** The pod-template annotation whose change rolls the pods, as `kubectl rollout restart` does. */
export const RESTARTED_AT = "keyplane.dev/restartedAt";

/**
 * Whether a pod spec reads the Secret, in any of the four ways a pod can: an env var's
 * secretKeyRef, envFrom's secretRef, a secret volume, or a projected volume's secret source; in any
 * container, init container or ephemeral container.
 */
export function usesSecret(pod: V1PodSpec | undefined, secretName: string): boolean {
  if (!pod) return false;
  const containers = [...pod.containers, ...(pod.initContainers ?? []), ...(pod.ephemeralContainers ?? [])];
  const inContainers = containers.some(
    (c) =>
      (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === secretName) ||
      (c.envFrom ?? []).some((e) => e.secretRef?.name === secretName),
  );
  const inVolumes = (pod.volumes ?? []).some(
    (v) => v.secret?.secretName === secretName || (v.projected?.sources ?? []).some((s) => s.secret?.name === secretName),
  );
  return inContainers || inVolumes;
}

/** The restart marker a workload's pod template carries now, if any. */
export function restartedAt(object: Workload["object"]): string | undefined {
  return object.spec?.template.metadata?.annotations?.[RESTARTED_AT];
}

/** "Deployment team-a/api": a workload as events and logs name it. */
export function describeWorkload(workload: Workload): string {
  return `${workload.kind} ${workload.object.metadata?.namespace ?? ""}/${workload.object.metadata?.name ?? ""}`;
}

/** Where the restarts of one rotation stand, over the workloads whose pod template uses the Secret. */
export interface Restarts {
  /** Those that do not carry this rotation's marker yet: each is patched once. */
  due: Workload[];
  /** Those that carry it and have not rolled out yet. */
  rollingOut: Workload[];
}

export function restartsFor(workloads: Iterable<Workload>, secretName: string, marker: string): Restarts {
  const restarts: Restarts = { due: [], rollingOut: [] };
  for (const workload of workloads) {
    if (!usesSecret(workload.object.spec?.template.spec, secretName)) continue;
    if (restartedAt(workload.object) !== marker) restarts.due.push(workload);
    else if (!rolledOut(workload)) restarts.rollingOut.push(workload);
  }
  return restarts;
}

/**
 * Whether the workload's controller has rolled out its current pod template: it has seen the latest
 * generation and every replica runs the new template (the checks of `kubectl rollout status`). A
 * StatefulSet with the OnDelete strategy never rolls by itself: it counts as rolled out only once its
 * pods were replaced, which keyplane cannot cause, so its old key goes at the grace period's end.
 */
export function rolledOut(workload: Workload): boolean {
  const { metadata, status } = workload.object;
  if (!status || (status.observedGeneration ?? 0) < (metadata?.generation ?? 0)) return false;
  switch (workload.kind) {
    case "Deployment": {
      const s = workload.object.status ?? {};
      const want = workload.object.spec?.replicas ?? 1;
      const updated = s.updatedReplicas ?? 0;
      return updated >= want && (s.replicas ?? 0) <= updated && (s.availableReplicas ?? 0) >= updated;
    }
    case "StatefulSet": {
      const s = workload.object.status ?? { replicas: 0 };
      const want = workload.object.spec?.replicas ?? 1;
      if (workload.object.spec?.updateStrategy?.type === "OnDelete") return s.currentRevision === s.updateRevision && (s.readyReplicas ?? 0) >= want;
      return (s.updatedReplicas ?? 0) >= want && (s.readyReplicas ?? 0) >= want && (want === 0 || s.currentRevision === s.updateRevision);
    }
    case "DaemonSet": {
      const s = workload.object.status ?? { currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 };
      return (s.updatedNumberScheduled ?? 0) >= s.desiredNumberScheduled && (s.numberAvailable ?? 0) >= s.desiredNumberScheduled;
    }
  }
}

/** The merge patch that sets the restart marker on the pod template. */
export function restartPatch(marker: string): object {
  return { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: marker } } } } };
}
