// Starting the operator inside `keyplane serve`: every replica serves REST; the one that holds the
// leader-election Lease also runs the controller (informers, queue, reconciler).
import { hostname } from "node:os";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { OperatorConfig } from "../config.ts";
import { GROUP, PLURAL, CRD_VERSION } from "./resource/apikey.ts";
import { reuseConnections } from "./kube/connections.ts";
import { startController, type Controller, type ControllerStats } from "./controller.ts";
import { apiErrorText } from "./kube/kube-api.ts";
import { leaseApiFor, LeaderElector } from "./kube/leader.ts";
import { formatRef } from "./resource/object-ref.ts";
import type { BackoffOptions } from "./kube/queue.ts";
import type { KeyStoreNeeds } from "./reconcile/keystore.ts";

export interface RunningOperator {
  stop(): Promise<void>;
}

export interface OperatorOptions {
  ctx: KeyStoreNeeds;
  kubeConfig: KubeConfig;
  log: Logger;
  /** This replica in the Lease: POD_NAME, else host name and pid. */
  identity?: string;
  leaseNamespace?: string;
  leaseName?: string;
  /** Only this namespace's ApiKeys (and the Secrets there); all namespaces when undefined. */
  watchNamespace?: string;
  /** Whether a Namespace's keyplane.dev/customers bounds the customers its ApiKeys name (default true). */
  namespaceBinding?: boolean;
  /** Every ApiKey is reconciled again this often, whatever happened (default 10 minutes). */
  resyncMs?: number;
  /** ApiKeys reconciled at once (default 8). */
  concurrency?: number;
  backoff?: BackoffOptions;
  watchBackoff?: BackoffOptions;
  /** Lease timing: duration 15 s, renew deadline 10 s, retry (renew) period 5 s unless told. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  clock?: () => Date;
}

export interface Operator extends RunningOperator {
  readonly identity: string;
  readonly isLeader: boolean;
  /** Resolves once this replica leads and its caches are synced (it may wait for ever: use a timeout). */
  whenLeading(): Promise<void>;
  /** As the periodic resync: queues every ApiKey, and resolves once they are all reconciled. Leader only. */
  resync(): Promise<void>;
  /** Resolves once no ApiKey waits or is being reconciled (at once when not leading). */
  idle(): Promise<void>;
  /** The leader's caches and queue; undefined when not leading. */
  stats(): ControllerStats | undefined;
}

export const DEFAULTS = {
  leaseName: "keyplane-operator",
  leaseNamespace: "default",
  resyncMs: 10 * 60_000,
  concurrency: 8,
  namespaceBinding: true,
  backoff: { baseMs: 1_000, maxMs: 2 * 60_000, jitter: 0.1 },
  watchBackoff: { baseMs: 500, maxMs: 30_000, jitter: 0.2 },
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 5_000,
} as const;

/** Campaigns for the Lease and, while leading, reconciles ApiKeys. In-process: tests call it directly. */
export function runOperator(options: OperatorOptions): Operator {
  const o = { ...DEFAULTS, clock: () => new Date(), ...definedOnly(options) };
  reuseConnections(o.kubeConfig);
  const identity = o.identity ?? `${hostname()}-${process.pid}`;
  const log = o.log;
  const elector = new LeaderElector({
    leases: leaseApiFor(o.kubeConfig),
    namespace: o.leaseNamespace,
    name: o.leaseName,
    identity,
    leaseDurationMs: o.leaseDurationMs,
    renewDeadlineMs: o.renewDeadlineMs,
    retryPeriodMs: o.retryPeriodMs,
    log,
    metrics: o.ctx.metrics,
  });
  let controller: Controller | undefined;
  let leading = deferred();

  elector.run({
    onStartedLeading(signal) {
      controller = startController({
        ctx: o.ctx, kubeConfig: o.kubeConfig, log, identity, watchNamespace: o.watchNamespace, namespaceBinding: o.namespaceBinding, resyncMs: o.resyncMs,
        concurrency: o.concurrency, backoff: o.backoff, watchBackoff: o.watchBackoff, clock: o.clock,
      }, signal);
      const announce = leading;
      controller.synced.then(() => announce.resolve(), () => undefined);
    },
    async onStoppedLeading() {
      const running = controller;
      controller = undefined;
      leading = deferred();
      await running?.stop();
    },
  });

  const current = () => (elector.isLeader ? controller : undefined);
  return {
    identity,
    get isLeader() {
      return elector.isLeader;
    },
    whenLeading: () => leading.promise,
    async resync() {
      const c = current();
      if (!c) throw new Error("not the leader: only the leader reconciles");
      await c.synced;
      c.resync();
      await c.idle();
    },
    async idle() {
      await current()?.idle();
    },
    stats: () => current()?.stats(),
    stop: () => elector.stop(),
  };
}

function deferred(): { resolve: () => void; promise: Promise<void> } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { resolve, promise };
}

function definedOnly<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

// --- keyplane serve ----------------------------------------------------------------------------

/** The operator's options from keyplane's configuration. */
export function operatorSettings(config: OperatorConfig): Partial<OperatorOptions> {
  const lease = config.leaseDurationMs;
  return {
    identity: config.identity,
    leaseNamespace: config.leaseNamespace,
    watchNamespace: config.watchNamespace,
    namespaceBinding: config.namespaceBinding,
    resyncMs: config.resyncMs,
    // The renew deadline and period keep client-go's proportions: 2/3 and 1/3 of the duration.
    ...(lease !== undefined ? { leaseDurationMs: lease, renewDeadlineMs: (lease * 2) / 3, retryPeriodMs: lease / 3 } : {}),
  };
}

/**
 * Resolves when the API server serves ApiKeys to this identity, and Namespaces where they bind ApiKeys
 * (without them no ApiKey would ever be reconciled); rejects with why not.
 */
async function probe(kubeConfig: KubeConfig, watchNamespace: string | undefined, namespaceBinding: boolean, timeoutMs = 5_000): Promise<void> {
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const list = watchNamespace
    ? objects.listNamespacedCustomObject({ group: GROUP, version: CRD_VERSION, namespace: watchNamespace, plural: PLURAL, limit: 1 })
    : objects.listCustomObjectForAllNamespaces({ group: GROUP, version: CRD_VERSION, resourcePlural: PLURAL, limit: 1 });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)));
  try {
    await Promise.race([list, timeout]).catch((error: unknown) => {
      const text = apiErrorText(error);
      throw new Error(/^404/.test(text) ? `the ApiKey CRD is not installed (kubectl apply -f crds/): ${text}` : text, { cause: error });
    });
    if (!namespaceBinding) return;
    await Promise.race([kubeConfig.makeApiClient(CoreV1Api).listNamespace({ limit: 1 }), timeout]).catch((error: unknown) => {
      throw new Error("cannot list Namespaces, whose keyplane.dev/customers bind ApiKeys to customers (grant get, list and watch " +
        `on namespaces, as deploy/rbac.yaml does, or set KEYPLANE_NAMESPACE_BINDING=off): ${apiErrorText(error)}`, { cause: error });
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The operator on the cluster configured at `where` (launch.ts decides whether there is one to try):
 * `on`, it must answer and serve ApiKeys, or this throws; `auto`, where it does not, this logs why and
 * returns undefined.
 */
export async function startOnCluster(config: OperatorConfig, where: string, ctx: KeyStoreNeeds, log: Logger): Promise<RunningOperator | undefined> {
  const { mode } = config;
  const settings = operatorSettings(config);
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromDefault();
    reuseConnections(kubeConfig);
    await probe(kubeConfig, settings.watchNamespace, settings.namespaceBinding ?? DEFAULTS.namespaceBinding);
  } catch (error) {
    const why = `cluster of ${where} (${kubeConfig.getCurrentCluster()?.server ?? "no server"}) unusable: ${error instanceof Error ? error.message : String(error)}`;
    if (mode === "on") throw new Error(`KEYPLANE_OPERATOR=on but the ${why}`, { cause: error });
    log.info({ mode }, `operator off: ${why}`);
    return undefined;
  }
  const operatorLog = log.child({ component: "operator" });
  const operator = runOperator({ ctx, kubeConfig, log: operatorLog, ...settings });
  operatorLog.info({ identity: operator.identity, lease: formatRef({ namespace: settings.leaseNamespace ?? DEFAULTS.leaseNamespace, name: DEFAULTS.leaseName }), server: kubeConfig.getCurrentCluster()?.server },
    "operator started: campaigning for leadership");
  return operator;
}
