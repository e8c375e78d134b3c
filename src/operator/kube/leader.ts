// Leader election through a coordination.k8s.io/v1 Lease, after client-go's leaderelection: a replica
// holds the Lease by renewing it; another may take it once it has seen no renewal for a whole lease
// duration, timed on its own clock (clocks of two machines need not agree). A leader that cannot renew
// within the renew deadline stops leading at once, before anyone else may take over.
import { setTimeout as sleep } from "node:timers/promises";
import { CoordinationV1Api, V1MicroTime } from "@kubernetes/client-node";
import type { KubeConfig, V1Lease } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Metrics } from "../../services/operations/metrics.ts";
import { apiErrorText, apiStatusCode } from "./kube-api.ts";
import { formatRef } from "../resource/object-ref.ts";

/** The Lease calls leader election makes: the API server's, or a test's own. */
export interface LeaseApi {
  read(namespace: string, name: string): Promise<V1Lease>;
  create(namespace: string, lease: V1Lease): Promise<V1Lease>;
  /** Replaces the Lease, guarded by the resourceVersion in `lease` (409 when it is stale). */
  replace(namespace: string, name: string, lease: V1Lease): Promise<V1Lease>;
}

/** Time as leader election sees it: injected, so tests run it on a fake clock. */
export interface ElectionClock {
  /** Monotonic milliseconds: how long since this replica saw the Lease change. */
  now(): number;
  /** Wall-clock time, for the Lease's acquire and renew times. */
  wallNow(): Date;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const realClock: ElectionClock = {
  now: () => performance.now(),
  wallNow: () => new Date(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => undefined),
};

export function leaseApiFor(kubeConfig: KubeConfig): LeaseApi {
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  return {
    read: (namespace, name) => api.readNamespacedLease({ namespace, name }),
    create: (namespace, body) => api.createNamespacedLease({ namespace, body }),
    replace: (namespace, name, body) => api.replaceNamespacedLease({ namespace, name, body }),
  };
}

export interface LeaderElectionOptions {
  leases: LeaseApi;
  namespace: string;
  name: string;
  identity: string;
  /** How long others wait, from the last renewal they saw, before they take the Lease. */
  leaseDurationMs: number;
  /** How long the leader keeps trying to renew before it gives up leading; less than leaseDurationMs. */
  renewDeadlineMs: number;
  /** How often the leader renews, and candidates try. */
  retryPeriodMs: number;
  log: Logger;
  clock?: ElectionClock;
  /** Shows whether this replica leads (keyplane_operator_leader). */
  metrics?: Pick<Metrics, "leader">;
}

export interface LeadershipCallbacks {
  /** Called on becoming leader; `signal` aborts the moment leadership is lost. */
  onStartedLeading(signal: AbortSignal): void;
  /** Called on losing leadership (or stopping), and awaited before campaigning again. */
  onStoppedLeading(): Promise<void> | void;
}

export class LeaderElector {
  readonly #o: LeaderElectionOptions;
  readonly #api: LeaseApi;
  readonly #clock: ElectionClock;
  readonly #stop = new AbortController();
  #lease: V1Lease | undefined;
  /** When this replica last saw the Lease's record change, on its own clock. */
  #observedAt = 0;
  #observedVersion: string | undefined;
  #leading = false;
  #running: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    if (options.renewDeadlineMs >= options.leaseDurationMs) throw new Error("renewDeadlineMs must be shorter than leaseDurationMs");
    this.#o = options;
    this.#api = options.leases;
    this.#clock = options.clock ?? realClock;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** Campaigns until stop(): leads while it holds the Lease, and campaigns again when it loses it. */
  run(callbacks: LeadershipCallbacks): void {
    this.#running = this.#loop(callbacks);
  }

  /** Stops campaigning; a leader stops leading and releases the Lease, so that another takes over at once. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  async #loop(callbacks: LeadershipCallbacks): Promise<void> {
    const stopped = this.#stop.signal;
    while (!stopped.aborted) {
      if (!(await this.#tryAcquireOrRenew())) {
        await this.#pause(this.#o.retryPeriodMs * (1 + 0.2 * Math.random()));
        continue;
      }
      this.#o.log.info({ lease: formatRef(this.#o), identity: this.#o.identity }, "became leader");
      this.#leading = true;
      this.#o.metrics?.leader(true);
      const leadership = new AbortController();
      try {
        callbacks.onStartedLeading(leadership.signal);
      } catch (error) {
        this.#o.log.error({ err: error }, "could not start leading");
      }
      await this.#renewUntilLost();
      this.#leading = false;
      this.#o.metrics?.leader(false);
      leadership.abort();
      if (stopped.aborted) await this.#release();
      else this.#o.log.warn({ lease: formatRef(this.#o) }, "lost leadership: reconciling stops");
      await callbacks.onStoppedLeading();
    }
  }

  /** Renews every retry period; returns when stopped, or when no renewal succeeded within the renew deadline. */
  async #renewUntilLost(): Promise<void> {
    let renewedAt = this.#clock.now();
    while (!this.#stop.signal.aborted) {
      await this.#pause(this.#o.retryPeriodMs);
      if (this.#stop.signal.aborted) return;
      const left = renewedAt + this.#o.renewDeadlineMs - this.#clock.now();
      if (left > 0 && (await this.#withinDeadline(this.#tryAcquireOrRenew(), left))) {
        renewedAt = this.#clock.now();
      } else if (this.#clock.now() - renewedAt >= this.#o.renewDeadlineMs) {
        return;
      }
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.#o;
    const now = new V1MicroTime(this.#clock.wallNow().getTime());
    const durationSeconds = Math.ceil(this.#o.leaseDurationMs / 1000);
    try {
      // The leader renews from the Lease it last wrote; only a conflict makes it read again.
      const lease = this.#lease?.spec?.holderIdentity === identity ? this.#lease : await this.#read();
      if (!lease) {
        const created = await this.#api.create(namespace, {
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
        this.#observe(created);
        return true;
      }
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity ?? "";
      const heldFor = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (holder !== "" && holder !== identity && this.#clock.now() < this.#observedAt + heldFor) return false;
      const ours = holder === identity;
      const replaced = await this.#api.replace(namespace, name, {
        ...lease,
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: ours && spec.acquireTime ? spec.acquireTime : now,
          renewTime: now,
          leaseTransitions: ours ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
        },
      });
      this.#observe(replaced);
      return true;
    } catch (error) {
      this.#lease = undefined;
      const code = apiStatusCode(error);
      // 409: another replica wrote the Lease first (a race to take it, or it was taken from us).
      if (code !== 409) this.#o.log.warn({ error: apiErrorText(error) }, "leader election: could not read or write the Lease");
      return false;
    }
  }

  async #read(): Promise<V1Lease | undefined> {
    try {
      const lease = await this.#api.read(this.#o.namespace, this.#o.name);
      this.#observe(lease);
      return lease;
    } catch (error) {
      if (apiStatusCode(error) === 404) return undefined;
      throw error;
    }
  }

  #observe(lease: V1Lease): void {
    this.#lease = lease;
    if (lease.metadata?.resourceVersion !== this.#observedVersion) {
      this.#observedVersion = lease.metadata?.resourceVersion;
      this.#observedAt = this.#clock.now();
    }
  }

  /** Gives the Lease up, so that another replica need not wait for it to expire. */
  async #release(): Promise<void> {
    const lease = this.#lease;
    if (lease?.spec?.holderIdentity !== this.#o.identity) return;
    try {
      await this.#api.replace(this.#o.namespace, this.#o.name, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: new V1MicroTime(this.#clock.wallNow().getTime()) },
      });
      this.#o.log.info({ lease: formatRef(this.#o) }, "released leadership");
    } catch (error) {
      this.#o.log.warn({ error: apiErrorText(error) }, "could not release the Lease; it expires by itself");
    }
    this.#lease = undefined;
  }

  #pause(ms: number): Promise<void> {
    return this.#clock.sleep(ms, this.#stop.signal);
  }

  /** The renewal's answer, or false when it does not come within `ms` (a late renewal counts as none). */
  async #withinDeadline(renewal: Promise<boolean>, ms: number): Promise<boolean> {
    const expired = new AbortController();
    const late = this.#clock.sleep(ms, expired.signal).then(() => false);
    try {
      return await Promise.race([renewal, late]);
    } finally {
      expired.abort();
    }
  }
}
