// The operator's port onto the Kubernetes API: the few reads and writes gather and apply make.
import { randomBytes } from "node:crypto";
import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { CoreV1Event, KubeConfig, V1Namespace, V1Secret } from "@kubernetes/client-node";
import type { EventSpec } from "../reconcile/actions.ts";
import { GROUP, PLURAL, CRD_VERSION, type ApiKey, type ApiKeyStatus, type RotationStatus } from "../resource/apikey.ts";
import type { ObjectRef } from "../resource/object-ref.ts";
import { restartedAt, restartPatch, type Workload } from "../rotation/workloads.ts";

export interface KubeApi {
  readApiKey(ref: ObjectRef): Promise<ApiKey | undefined>;
  /** Sets the finalizers, guarded by the resourceVersion it was read at; returns the ApiKey as it now is. */
  patchFinalizers(apiKey: ApiKey, finalizers: string[]): Promise<ApiKey | undefined>;
  /**
   * Writes the status through the status subresource (a merge patch: absent fields are removed); with
   * a resourceVersion, only over the ApiKey as it was at that version (else 409).
   */
  patchStatus(ref: ObjectRef, status: ApiKeyStatus, resourceVersion?: string): Promise<void>;
  /**
   * Sets a workload's restart marker on its pod template, as `kubectl rollout restart` does, unless it
   * carries that marker already (a cache may lag behind an earlier restart): false then, and when the
   * workload is gone.
   */
  restartWorkload(workload: ObjectRef & { kind: Workload["kind"] }, marker: string): Promise<boolean>;
  readSecret(ref: ObjectRef): Promise<V1Secret | undefined>;
  readNamespace(name: string): Promise<V1Namespace | undefined>;
  createSecret(secret: V1Secret): Promise<void>;
  replaceSecret(secret: V1Secret): Promise<void>;
  /** Deletes the Secret of this uid; a Secret already gone, or replaced by another of the name, is left be. */
  deleteSecret(ref: ObjectRef, uid: string): Promise<void>;
  recordEvent(apiKey: ApiKey, event: EventSpec, now: Date): Promise<void>;
}

/** The HTTP status of a failed API call; undefined for errors that did not come from the API server. */
export function apiStatusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/** A short text of a failed API call, for logs and the status: the server's own message when it sent one. */
export function apiErrorText(error: unknown): string {
  if (!(error instanceof ApiException)) return error instanceof Error ? error.message : String(error);
  let body: unknown = error.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      // not JSON: keep the text
    }
  }
  const message = (body as { message?: unknown } | null)?.message;
  return `${error.code}${typeof message === "string" ? ` ${message}` : typeof body === "string" && body ? ` ${body.slice(0, 200)}` : ""}`;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

async function orUndefined<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (apiStatusCode(error) === 404) return undefined;
    throw error;
  }
}

export function kubeApiFor(kubeConfig: KubeConfig, reportingInstance: string): KubeApi {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const crd = { group: GROUP, version: CRD_VERSION, plural: PLURAL };
  type Patch = ObjectRef & { body: object };
  const kinds = {
    Deployment: { read: (ref: ObjectRef) => apps.readNamespacedDeployment(ref), patch: (p: Patch) => apps.patchNamespacedDeployment(p, mergePatch) },
    StatefulSet: { read: (ref: ObjectRef) => apps.readNamespacedStatefulSet(ref), patch: (p: Patch) => apps.patchNamespacedStatefulSet(p, mergePatch) },
    DaemonSet: { read: (ref: ObjectRef) => apps.readNamespacedDaemonSet(ref), patch: (p: Patch) => apps.patchNamespacedDaemonSet(p, mergePatch) },
  } satisfies Record<Workload["kind"], unknown>;
  return {
    readApiKey: (ref) => orUndefined(objects.getNamespacedCustomObject({ ...crd, ...ref }) as Promise<ApiKey>),
    patchFinalizers: (apiKey, finalizers) =>
      orUndefined(objects.patchNamespacedCustomObject({
        ...crd,
        namespace: apiKey.metadata.namespace ?? "",
        name: apiKey.metadata.name ?? "",
        // Only metadata: the spec is the user's and is never written. A finalizer list is replaced whole
        // by a merge patch, so the resourceVersion makes it fail (409) rather than drop another's.
        body: { metadata: { finalizers, resourceVersion: apiKey.metadata.resourceVersion } },
      }, mergePatch) as Promise<ApiKey>),
    async patchStatus(ref, status, resourceVersion) {
      const body = {
        ...(resourceVersion ? { metadata: { resourceVersion } } : {}),
        status: { ...status, key: status.key ?? null, secretName: status.secretName ?? null, rotation: rotationPatch(status.rotation) },
      };
      await objects.patchNamespacedCustomObjectStatus({ ...crd, ...ref, body }, mergePatch);
    },
    async restartWorkload({ kind, ...ref }, marker) {
      const object = await orUndefined(kinds[kind].read(ref));
      if (!object || restartedAt(object) === marker) return false;
      // Guarded by the resourceVersion read: a concurrent restart is seen on the next look, not doubled.
      const body = { ...restartPatch(marker), metadata: { resourceVersion: object.metadata?.resourceVersion } };
      await kinds[kind].patch({ ...ref, body });
      return true;
    },
    readSecret: (ref) => orUndefined(core.readNamespacedSecret(ref)),
    readNamespace: (name) => orUndefined(core.readNamespace({ name })),
    async createSecret(secret) {
      await core.createNamespacedSecret({ namespace: secret.metadata?.namespace ?? "", body: secret });
    },
    async replaceSecret(secret) {
      await core.replaceNamespacedSecret({ namespace: secret.metadata?.namespace ?? "", name: secret.metadata?.name ?? "", body: secret });
    },
    async deleteSecret(ref, uid) {
      try {
        await core.deleteNamespacedSecret({ ...ref, body: { preconditions: { uid } } });
      } catch (error) {
        // 404: gone already. 409: the uid precondition failed, unless the Secret is still the same one.
        const code = apiStatusCode(error);
        if (code === 404) return;
        if (code === 409 && (await orUndefined(core.readNamespacedSecret(ref)))?.metadata?.uid !== uid) return;
        throw error;
      }
    },
    async recordEvent(apiKey, event, now) {
      const { name = "", namespace = "", uid, resourceVersion } = apiKey.metadata;
      const body: CoreV1Event = {
        metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace },
        involvedObject: { apiVersion: apiKey.apiVersion, kind: apiKey.kind, name, namespace, uid, resourceVersion },
        type: event.type,
        reason: event.reason,
        message: event.message,
        source: { component: "keyplane" },
        reportingComponent: "keyplane.dev/operator",
        reportingInstance,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      await core.createNamespacedEvent({ namespace, body });
    },
  };
}

/** status.rotation as a merge patch: the fields it lacks are removed. */
function rotationPatch(rotation: RotationStatus | undefined): Record<keyof RotationStatus, unknown> | null {
  if (!rotation) return null;
  const { lastRotationTime = null, nextRotationTime = null, lastRequest = null, previousKey = null } = rotation;
  return { lastRotationTime, nextRotationTime, lastRequest, previousKey };
}
