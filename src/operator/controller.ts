// What the leader runs: informers on ApiKeys, on keyplane's Secrets, on the apps workloads a rotation
// restarts and on the Namespaces that bind ApiKeys to customers, the key store's change feed, a periodic
// resync, all feeding one work queue whose workers reconcile.
import { setTimeout as sleep } from "node:timers/promises";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { KubeConfig, V1DaemonSet, V1Deployment, V1Namespace, V1Secret, V1StatefulSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { errorFields } from "../domain/errors.ts";
import type { Metrics } from "../services/operations/metrics.ts";
import { API_VERSION, GROUP, KIND, MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLURAL, CRD_VERSION, type ApiKey } from "./resource/apikey.ts";
import { listenForManagedKeyChanges } from "./feed.ts";
import type { ObjectCache } from "./reconcile/gather.ts";
import { Informer, type InformerOptions, type KubeObject, type ListPage } from "./kube/informer.ts";
import { apiErrorText, kubeApiFor } from "./kube/kube-api.ts";
import { formatRef, parseRef, refOf, type ObjectRef } from "./resource/object-ref.ts";
import { keyStoreFor, type KeyStoreNeeds } from "./reconcile/keystore.ts";
import { CUSTOMERS_ANNOTATION } from "./resource/namespace-binding.ts";
import { OwnerIndex } from "./kube/owner-index.ts";
import { backoffDelay, WorkQueue, type BackoffOptions, type ProcessResult } from "./kube/queue.ts";
import { reconcile } from "./reconcile/reconciler.ts";
import type { Workload } from "./rotation/workloads.ts";

export interface ControllerOptions {
  ctx: KeyStoreNeeds;
  kubeConfig: KubeConfig;
  log: Logger;
  /** This replica, as events report it. */
  identity: string;
  /** Only this namespace's ApiKeys and Secrets; all namespaces when undefined. */
  watchNamespace?: string;
  /** Whether a Namespace's keyplane.dev/customers bounds the customers its ApiKeys name. */
  namespaceBinding: boolean;
  resyncMs: number;
  concurrency: number;
  /** Of a key that failed, or is not Ready for a reason that may pass (ScopeNotFound, conflicts). */
  backoff: BackoffOptions;
  /** Of a dropped watch or a failed list. */
  watchBackoff: BackoffOptions;
  clock: () => Date;
}

export interface Controller {
  /** Resolves once both informers hold a full list. */
  readonly synced: Promise<void>;
  /** Queues every ApiKey, as the periodic resync does. */
  resync(): void;
  /** Resolves once no ApiKey waits or is being reconciled. */
  idle(): Promise<void>;
  /** What the caches hold and the queue has: for logs, and tests of what is (not) cached. */
  stats(): ControllerStats;
  stop(): Promise<void>;
}

export interface ControllerStats {
  apiKeys: number;
  secrets: number;
  queued: number;
}

const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** The ApiKeys that own a Secret (normally one, as its controller). */
function ownersOf(secret: V1Secret): ObjectRef[] {
  return (secret.metadata?.ownerReferences ?? [])
    .filter((ref) => ref.kind === KIND && ref.apiVersion === API_VERSION)
    .map((ref) => ({ namespace: secret.metadata?.namespace ?? "", name: ref.name }));
}

/**
 * Listens for key changes; while the database refuses, retries with backoff (the periodic resync still
 * catches up meanwhile). Returns what stops listening.
 */
function listenUntilStopped(o: ControllerOptions, leadership: AbortSignal, onChanged: (ref: ObjectRef) => void, onMissed: () => void): () => Promise<void> {
  let unlisten: (() => Promise<void>) | undefined;
  const attempt = async (failures: number): Promise<void> => {
    if (leadership.aborted) return;
    try {
      unlisten = await listenForManagedKeyChanges(o.ctx, onChanged, onMissed);
      if (failures > 0) onMissed();
      if (leadership.aborted) await unlisten();
    } catch (error) {
      o.log.warn({ err: errorFields(error), failures: failures + 1 }, "cannot listen for key changes; retrying");
      await sleep(backoffDelay(failures + 1, o.watchBackoff), undefined, { signal: leadership }).catch(() => undefined);
      return attempt(failures + 1);
    }
  };
  const listening = attempt(0);
  return async () => {
    await listening;
    await unlisten?.().catch(() => undefined);
  };
}

export function startController(o: ControllerOptions, leadership: AbortSignal): Controller {
  const { kubeConfig, log, watchNamespace: ns } = o;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const apps = kubeConfig.makeApiClient(AppsV1Api);

  let queue: WorkQueue | undefined = undefined;
  const enqueue = (ref: ObjectRef) => queue?.add(formatRef(ref));

  const apiKeys = new Informer<ApiKey>({
    name: "apikeys",
    kubeConfig,
    path: ns ? `/apis/${GROUP}/${CRD_VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${GROUP}/${CRD_VERSION}/${PLURAL}`,
    list: (page) => (ns
      ? objects.listNamespacedCustomObject({ group: GROUP, version: CRD_VERSION, namespace: ns, plural: PLURAL, ...page })
      : objects.listCustomObjectForAllNamespaces({ group: GROUP, version: CRD_VERSION, resourcePlural: PLURAL, ...page })) as Promise<ListPage<ApiKey>>,
    onChange: (type, apiKey) => {
      o.ctx.metrics?.readyStatus(apiKey.metadata.namespace ?? "", apiKey.metadata.name ?? "", type === "deleted" ? undefined : apiKey.status?.conditions ?? []);
      enqueue(refOf(apiKey));
    },
    log,
    backoff: o.watchBackoff,
  });
  // Only keyplane's Secrets: the cache must not grow with the cluster's other Secrets.
  const owners = new OwnerIndex();
  const secrets = new Informer<V1Secret>({
    name: "secrets",
    kubeConfig,
    path: ns ? `/api/v1/namespaces/${ns}/secrets` : "/api/v1/secrets",
    labelSelector: MANAGED_SELECTOR,
    list: (page) => (ns ? core.listNamespacedSecret({ namespace: ns, ...page }) : core.listSecretForAllNamespaces(page)) as Promise<ListPage<V1Secret>>,
    onChange: (type, secret) => {
      owners.update(type, secret);
      ownersOf(secret).forEach(enqueue);
    },
    log,
    backoff: o.watchBackoff,
  });
  // The workloads a rotation may restart. A change to one requeues the ApiKeys of its namespace whose
  // rotation is under way: that is how a rollout's end is seen.
  const onWorkloadChange = (_type: unknown, workload: KubeObject) => {
    for (const apiKey of apiKeys.inNamespace(workload.metadata?.namespace ?? "")) {
      if (apiKey.status?.rotation?.previousKey) enqueue(refOf(apiKey));
    }
  };
  const workloadInformer = <T extends KubeObject>(name: string, list: InformerOptions<T>["list"]) =>
    new Informer<T>({
      name, kubeConfig, path: ns ? `/apis/apps/v1/namespaces/${ns}/${name}` : `/apis/apps/v1/${name}`,
      list, onChange: onWorkloadChange, log, backoff: o.watchBackoff,
    });
  const deployments = workloadInformer<V1Deployment>("deployments", (page) =>
    ns ? apps.listNamespacedDeployment({ namespace: ns, ...page }) : apps.listDeploymentForAllNamespaces(page));
  const statefulSets = workloadInformer<V1StatefulSet>("statefulsets", (page) =>
    ns ? apps.listNamespacedStatefulSet({ namespace: ns, ...page }) : apps.listStatefulSetForAllNamespaces(page));
  const daemonSets = workloadInformer<V1DaemonSet>("daemonsets", (page) =>
    ns ? apps.listNamespacedDaemonSet({ namespace: ns, ...page }) : apps.listDaemonSetForAllNamespaces(page));
  // With the binding on, the Namespaces (or the one watched): a change of one's keyplane.dev/customers
  // requeues the ApiKeys of that namespace, level-based, whatever the change was.
  const customersOf = new Map<string, string | undefined>();
  const namespaces = o.namespaceBinding ? new Informer<V1Namespace>({
    name: "namespaces",
    kubeConfig,
    path: "/api/v1/namespaces",
    ...(ns ? { fieldSelector: `metadata.name=${ns}` } : {}),
    list: (page) => core.listNamespace(page) as Promise<ListPage<V1Namespace>>,
    onChange: (type, namespace) => {
      const name = namespace.metadata?.name ?? "";
      const customers = namespace.metadata?.annotations?.[CUSTOMERS_ANNOTATION];
      if (type !== "deleted" && customersOf.has(name) && customersOf.get(name) === customers) return;
      if (type === "deleted") customersOf.delete(name);
      else customersOf.set(name, customers);
      for (const apiKey of apiKeys.inNamespace(name)) enqueue(refOf(apiKey));
    },
    log,
    backoff: o.watchBackoff,
  }) : undefined;
  const informers = [apiKeys, secrets, deployments, statefulSets, daemonSets, ...(namespaces ? [namespaces] : [])];

  const cache: ObjectCache = {
    apiKey: (ref) => apiKeys.get(ref.namespace, ref.name),
    namespace: (name) => namespaces?.get("", name),
    managedSecret: (ref) => secrets.get(ref.namespace, ref.name),
    ownedSecrets: (namespace, uid) => owners.owned(namespace, uid),
    *workloads(namespace): Iterable<Workload> {
      for (const object of deployments.inNamespace(namespace)) yield { kind: "Deployment", object };
      for (const object of statefulSets.inNamespace(namespace)) yield { kind: "StatefulSet", object };
      for (const object of daemonSets.inNamespace(namespace)) yield { kind: "DaemonSet", object };
    },
  };
  const deps = {
    store: keyStoreFor(o.ctx),
    kube: kubeApiFor(kubeConfig, o.identity),
    cache,
    clock: o.clock,
    namespaceBinding: o.namespaceBinding,
    log,
    signal: leadership,
  };
  const resyncAll = () => {
    for (const apiKey of apiKeys.all()) enqueue(refOf(apiKey));
  };

  const synced = Promise.all(informers.map((informer) => informer.start())).then(() => undefined);
  synced.catch(() => undefined);
  queue = new WorkQueue({
    concurrency: o.concurrency,
    backoff: o.backoff,
    // No reconcile before every cache holds a full list: a missing ApiKey would read as a deleted one,
    // a missing workload as one a rotation need not wait for.
    process: async (key) => {
      await synced;
      return countedReconcile(o.ctx.metrics, () => reconcile(deps, parseRef(key)!));
    },
    onError: (key, error) => {
      if (!leadership.aborted) log.warn({ apiKey: key, error: apiErrorText(error), failures: queue?.failures(key) }, "reconcile failed; retrying after a backoff");
    },
  });
  // Keys changed through REST requeue their ApiKey within moments; if changes may have been missed, all.
  const unlisten = listenUntilStopped(o, leadership, enqueue, resyncAll);
  const resyncTimer = setInterval(resyncAll, o.resyncMs);
  resyncTimer.unref();
  synced.then(() => log.info({ apiKeys: apiKeys.size, secrets: secrets.size, namespace: ns ?? "(all)" }, "operator caches synced"), () => undefined);

  return {
    synced,
    resync: resyncAll,
    idle: () => queue.idle(),
    stats: () => ({ apiKeys: apiKeys.size, secrets: secrets.size, queued: queue.length }),
    async stop() {
      clearInterval(resyncTimer);
      await Promise.all([...informers.map((informer) => informer.stop()), unlisten()]);
      await queue.stop();
      o.ctx.metrics?.forgetReadyStatus();
    },
  };
}

/** A reconcile, counted by result (docs/operations.md, "Metrics"). */
export async function countedReconcile(metrics: Metrics | undefined, run: () => Promise<ProcessResult>): Promise<ProcessResult> {
  const startedAt = performance.now();
  const seconds = () => (performance.now() - startedAt) / 1000;
  try {
    const result = await run();
    metrics?.reconciled(result === "retry" ? "requeue" : "success", seconds());
    return result;
  } catch (error) {
    metrics?.reconciled("error", seconds());
    throw error;
  }
}
