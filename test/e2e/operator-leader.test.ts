// Leader election through a coordination.k8s.io Lease, against a real API server: one leader at a
// time, renewals, a quick takeover on a clean stop, and a takeover after the lease duration when the
// leader stops renewing.
import { CoordinationV1Api, V1MicroTime, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { leaseApiFor, LeaderElector, type LeaderElectionOptions } from "../../src/operator/kube/leader.ts";
import { createLogger } from "../../src/logging.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { FaultProxy } from "../support/fault-proxy.ts";
import { createTestNamespace, deleteTestNamespace, uniqueName, waitFor } from "../support/kube.ts";

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 };

interface Candidate {
  identity: string;
  elector: LeaderElector;
  /** Leadership spans as seen by the callbacks: [start, end?] in ms of performance.now(). */
  spans: Array<{ start: number; end?: number; signal: AbortSignal }>;
}

describeKube("operator leader election", () => {
  const kube = useKube({ withControllerManager: false });
  const log = createLogger({ level: "silent" });
  let namespace: string;
  let proxy: FaultProxy;
  const running: Candidate[] = [];

  beforeAll(async () => {
    namespace = await createTestNamespace(kube().kubeConfig, "leader");
    proxy = await FaultProxy.start(kube().kubeConfig);
  });
  afterEach(async () => {
    proxy.clearFaults();
    await Promise.all(running.splice(0).map((c) => c.elector.stop()));
  });
  afterAll(async () => {
    await proxy?.close();
    if (namespace) await deleteTestNamespace(kube().kubeConfig, namespace);
  });

  function candidate(identity: string, lease: string, kubeConfig: KubeConfig = kube().kubeConfig, options: Partial<LeaderElectionOptions> = {}): Candidate {
    const elector = new LeaderElector({ leases: leaseApiFor(kubeConfig), namespace, name: lease, identity, log, ...TIMING, ...options });
    const c: Candidate = { identity, elector, spans: [] };
    elector.run({
      onStartedLeading: (signal) => void c.spans.push({ start: performance.now(), signal }),
      onStoppedLeading: () => {
        const span = c.spans[c.spans.length - 1];
        if (span) span.end = performance.now();
      },
    });
    running.push(c);
    return c;
  }

  const leases = () => kube().kubeConfig.makeApiClient(CoordinationV1Api);
  const leaders = (cs: Candidate[]) => cs.filter((c) => c.elector.isLeader).map((c) => c.identity);

  it("elects exactly one of several candidates, which keeps renewing the Lease", async () => {
    const lease = uniqueName("lease");
    const cs = ["a", "b", "c"].map((id) => candidate(id, lease));
    const [leader] = await waitFor(() => leaders(cs).length === 1 && leaders(cs), { what: "a leader" });
    const first = await leases().readNamespacedLease({ namespace, name: lease });
    expect(first.spec).toMatchObject({ holderIdentity: leader, leaseDurationSeconds: 2 });

    // Through several renewals (the Lease's renewTime moving on, awaited), the same single leader.
    let renewals = 0;
    let seen = String(first.spec?.renewTime);
    const observed = new Set<string>();
    await waitFor(async () => {
      observed.add(leaders(cs).join(","));
      const renewed = String((await leases().readNamespacedLease({ namespace, name: lease })).spec?.renewTime);
      if (renewed !== seen) [seen, renewals] = [renewed, renewals + 1];
      return renewals >= 3;
    }, { timeoutMs: 10 * TIMING.leaseDurationMs, what: "three renewals" });
    expect([...observed]).toEqual([leader]);
    const later = await leases().readNamespacedLease({ namespace, name: lease });
    expect(later.spec?.holderIdentity).toBe(leader);
    expect(String(later.spec?.renewTime)).not.toBe(String(first.spec?.renewTime));
    expect(later.spec?.leaseTransitions).toBe(first.spec?.leaseTransitions);
    expect(cs.flatMap((c) => c.spans)).toHaveLength(1);
  });

  it("hands over at once when the leader stops: it releases the Lease", async () => {
    const lease = uniqueName("lease");
    const a = candidate("a", lease);
    await waitFor(() => a.elector.isLeader, { what: "a to lead" });
    // b campaigns but leaves a held Lease alone (the fake-clock tests in src/operator/kube/leader.test.ts
    // show that for any length of time); here: until a stops.
    const b = candidate("b", lease);
    await waitFor(async () => (await leases().readNamespacedLease({ namespace, name: lease })).spec?.holderIdentity === "a", { what: "a's Lease" });
    expect(b.elector.isLeader).toBe(false);

    const stoppedAt = performance.now();
    await a.elector.stop();
    expect(a.spans[0]?.signal.aborted).toBe(true);
    await waitFor(() => b.elector.isLeader, { timeoutMs: 5_000, intervalMs: 20, what: "b to take over" });
    // Well within a lease duration: b did not wait for the Lease to expire.
    expect(performance.now() - stoppedAt).toBeLessThan(TIMING.leaseDurationMs);
    const current = await leases().readNamespacedLease({ namespace, name: lease });
    expect(current.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
  });

  it("takes over a Lease whose holder stopped renewing, only after a whole lease duration", async () => {
    const lease = uniqueName("lease");
    const now = new V1MicroTime(Date.now());
    await leases().createNamespacedLease({
      namespace,
      body: { metadata: { name: lease }, spec: { holderIdentity: "vanished", leaseDurationSeconds: 2, acquireTime: now, renewTime: now, leaseTransitions: 4 } },
    });
    const start = performance.now();
    const b = candidate("b", lease);
    await waitFor(() => b.elector.isLeader, { timeoutMs: 10_000, intervalMs: 20, what: "b to take over" });
    expect(performance.now() - start).toBeGreaterThanOrEqual(TIMING.leaseDurationMs);
    expect((await leases().readNamespacedLease({ namespace, name: lease })).spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 5 });
  });

  it("stops leading at once when it cannot renew, before another may take over", async () => {
    const lease = uniqueName("lease");
    const a = candidate("a", lease, proxy.kubeConfig);
    await waitFor(() => a.elector.isLeader, { what: "a to lead" });
    const b = candidate("b", lease);
    // From now on every write of a's to the Lease fails.
    proxy.failWrites({ status: 500, resource: "leases", times: 1_000 });
    await waitFor(() => b.elector.isLeader, { timeoutMs: 10_000, intervalMs: 20, what: "b to take over" });
    const lost = a.spans[0];
    expect(lost?.signal.aborted).toBe(true);
    expect(lost?.end).toBeDefined();
    // a had stopped before b started: never two leaders.
    expect(lost!.end!).toBeLessThanOrEqual(b.spans[0]!.start);
    expect(a.elector.isLeader).toBe(false);
  });
});
