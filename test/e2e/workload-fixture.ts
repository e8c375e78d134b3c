// Workloads for the rotation suites: Deployments, StatefulSets and DaemonSets whose pod templates read
// a Secret, and what a test reads of them (how often the template changed, its restart marker). With
// kube-controller-manager running, a workload of 0 replicas rolls out by itself (no kubelet runs pods:
// one of 1 replica never does, until the test scales it down).
import { AppsV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1PodSpec } from "@kubernetes/client-node";

export type Kind = "Deployment" | "StatefulSet" | "DaemonSet";

export interface WorkloadRef {
  kind: Kind;
  name: string;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** The four ways a pod template reads a Secret. */
export const reads = {
  env: (secret: string): Partial<V1PodSpec> => ({ containers: [{ name: "app", image: "app", env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: secret, key: "apiKey" } } }] }] }),
  envFrom: (secret: string): Partial<V1PodSpec> => ({ containers: [{ name: "app", image: "app", envFrom: [{ secretRef: { name: secret } }] }] }),
  volume: (secret: string): Partial<V1PodSpec> => ({ containers: [{ name: "app", image: "app" }], volumes: [{ name: "key", secret: { secretName: secret } }] }),
  projected: (secret: string): Partial<V1PodSpec> => ({ containers: [{ name: "app", image: "app" }], volumes: [{ name: "key", projected: { sources: [{ secret: { name: secret } }] } }] }),
};

export class Workloads {
  readonly apps: AppsV1Api;
  readonly namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.apps = kubeConfig.makeApiClient(AppsV1Api);
    this.namespace = namespace;
  }

  async create(kind: Kind, name: string, pod: Partial<V1PodSpec>, replicas = 0): Promise<WorkloadRef> {
    const labels = { app: name };
    const template = { metadata: { labels }, spec: { containers: [], ...pod } as V1PodSpec };
    const metadata = { name, namespace: this.namespace };
    const namespace = this.namespace;
    if (kind === "Deployment") await this.apps.createNamespacedDeployment({ namespace, body: { metadata, spec: { replicas, selector: { matchLabels: labels }, template } } });
    if (kind === "StatefulSet") await this.apps.createNamespacedStatefulSet({ namespace, body: { metadata, spec: { replicas, serviceName: name, selector: { matchLabels: labels }, template } } });
    if (kind === "DaemonSet") await this.apps.createNamespacedDaemonSet({ namespace, body: { metadata, spec: { selector: { matchLabels: labels }, template } } });
    return { kind, name };
  }

  async read({ kind, name }: WorkloadRef) {
    const ref = { namespace: this.namespace, name };
    if (kind === "Deployment") return this.apps.readNamespacedDeployment(ref);
    if (kind === "StatefulSet") return this.apps.readNamespacedStatefulSet(ref);
    return this.apps.readNamespacedDaemonSet(ref);
  }

  /** How many times the pod template changed since creation, and its restart marker. */
  async restarts(workload: WorkloadRef): Promise<{ restarts: number; marker: string | undefined }> {
    const object = await this.read(workload);
    return { restarts: (object.metadata?.generation ?? 1) - 1, marker: object.spec?.template.metadata?.annotations?.["keyplane.dev/restartedAt"] };
  }

  async scale(name: string, replicas: number): Promise<void> {
    await this.apps.patchNamespacedDeployment({ namespace: this.namespace, name, body: { spec: { replicas } } }, mergePatch);
  }
}
