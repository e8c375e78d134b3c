import { ApiException, type V1Lease } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../logging.ts";
import { LeaderElector, type ElectionClock, type LeaseApi } from "./leader.ts";

// Leader election on a fake clock against a Lease store that behaves as the API server does: each
// write bumps the resourceVersion, and a write from a stale resourceVersion (or a create of an
// existing Lease) is refused with 409. Time moves only when a test advances it.
const LEASE_MS = 3_000;
const RENEW_DEADLINE_MS = 2_000;
const RETRY_MS = 1_000;

/** An error as the Kubernetes client throws it for an HTTP status. */
const apiError = (code: number, message: string) => new ApiException(code, message, { message }, {});

class LeaseStore implements LeaseApi {
  lease: V1Lease | undefined;
  version = 0;
  /** While set, every call waits for it: a slow or partitioned API server. */
  stall: Promise<void> | undefined;
  /** While true, every call fails with 500. */
  failing = false;

  async #gate(): Promise<void> {
    if (this.stall) await this.stall;
    if (this.failing) throw apiError(500, "etcd unavailable");
  }

  #stored(lease: V1Lease): V1Lease {
    this.lease = structuredClone({ ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.version) } });
    return structuredClone(this.lease);
  }

  async read(): Promise<V1Lease> {
    await this.#gate();
    if (!this.lease) throw apiError(404, "not found");
    return structuredClone(this.lease);
  }

  async create(_namespace: string, lease: V1Lease): Promise<V1Lease> {
    await this.#gate();
    if (this.lease) throw apiError(409, "exists");
    return this.#stored(lease);
  }

  async replace(_namespace: string, _name: string, lease: V1Lease): Promise<V1Lease> {
    await this.#gate();
    if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) throw apiError(409, "stale resourceVersion");
    return this.#stored(lease);
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity;
  }
}

class FakeClock implements ElectionClock {
  ms = 0;
  readonly #sleepers: { at: number; wake: () => void }[] = [];

  now = () => this.ms;
  wallNow = () => new Date(Date.UTC(2026, 0, 1) + this.ms);

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const sleeper = { at: this.ms + ms, wake: resolve };
      this.#sleepers.push(sleeper);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  /** Moves time on in small steps, letting every woken loop run to its next sleep. */
  async advance(ms: number, step = 50): Promise<void> {
    const end = this.ms + ms;
    while (this.ms < end) {
      this.ms = Math.min(end, this.ms + step);
      for (const s of this.#sleepers.filter((s) => s.at <= this.ms)) {
        this.#sleepers.splice(this.#sleepers.indexOf(s), 1);
        s.wake();
      }
      await settle();
    }
  }
}

/** Lets promise chains and I/O-free callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

const log = createLogger({ level: "silent" });
const running: LeaderElector[] = [];

function elector(identity: string, leases: LeaseApi, clock: FakeClock) {
  const e = new LeaderElector({
    leases, namespace: "keyplane-system", name: "keyplane-operator", identity,
    leaseDurationMs: LEASE_MS, renewDeadlineMs: RENEW_DEADLINE_MS, retryPeriodMs: RETRY_MS, log, clock,
  });
  const spans: { started: number; stopped?: number }[] = [];
  e.run({
    onStartedLeading: () => void spans.push({ started: clock.ms }),
    onStoppedLeading: () => void (spans.at(-1)!.stopped = clock.ms),
  });
  running.push(e);
  return { e, spans };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.stop()));
});

describe("leader election on a fake clock", () => {
  it("acquires an empty Lease at once, and records itself as holder", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    expect(a.e.isLeader).toBe(true);
    expect(store.lease?.spec).toMatchObject({ holderIdentity: "a", leaseDurationSeconds: 3, leaseTransitions: 0 });
  });

  it("renews its own Lease every retry period while leading", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    const first = String(store.lease?.spec?.renewTime);
    await clock.advance(5 * RETRY_MS);
    expect(a.e.isLeader).toBe(true);
    expect(String(store.lease?.spec?.renewTime)).not.toBe(first);
    expect(store.version).toBeGreaterThanOrEqual(5);
    expect(store.lease?.spec?.leaseTransitions).toBe(0);
  });

  it("leaves a renewed Lease to its holder, however long it waits", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    const b = elector("b", store, clock);
    await clock.advance(4 * LEASE_MS);
    expect([a.e.isLeader, b.e.isLeader]).toEqual([true, false]);
    expect(b.spans).toEqual([]);
  });

  it("takes over a Lease that was not renewed for a whole lease duration, counting a transition", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    store.lease = { metadata: { name: "keyplane-operator", resourceVersion: "1" }, spec: { holderIdentity: "gone", leaseDurationSeconds: 3, leaseTransitions: 4 } };
    store.version = 1;
    const b = elector("b", store, clock);
    await settle();
    expect(b.e.isLeader).toBe(false); // it has only just seen the holder's record
    await clock.advance(LEASE_MS - 500);
    expect(b.e.isLeader).toBe(false);
    await clock.advance(LEASE_MS);
    expect(b.e.isLeader).toBe(true);
    expect(store.lease?.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 5 });
  });

  it("stops leading when it cannot renew within the renew deadline, before anyone may take over", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    const b = elector("b", store, clock);
    await settle();
    const lastRenewal = clock.ms;
    store.failing = true;
    await clock.advance(RENEW_DEADLINE_MS + RETRY_MS);
    expect(a.e.isLeader).toBe(false);
    expect(a.spans[0]?.stopped).toBeLessThanOrEqual(lastRenewal + RENEW_DEADLINE_MS + RETRY_MS);
    expect(b.e.isLeader).toBe(false); // the Lease has not expired for b yet: nobody leads for a moment
    store.failing = false;
    await clock.advance(2 * LEASE_MS);
    expect([a.e.isLeader, b.e.isLeader].filter(Boolean)).toHaveLength(1);
  });

  it("does not count a renewal that answers after the deadline, when another has taken the Lease meanwhile", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    // The API server stops answering a: its renewals hang.
    let resume!: () => void;
    store.stall = new Promise((r) => (resume = r));
    await clock.advance(RENEW_DEADLINE_MS + RETRY_MS);
    expect(a.e.isLeader).toBe(false);
    // Meanwhile the Lease expired and another replica took it (written straight into the store).
    store.stall = undefined;
    store.lease = { ...store.lease!, spec: { ...store.lease!.spec, holderIdentity: "b", leaseTransitions: 1 } };
    store.version++;
    store.lease.metadata = { ...store.lease.metadata, resourceVersion: String(store.version) };
    resume(); // a's late renewal now reaches the server: stale, refused
    await clock.advance(RETRY_MS);
    expect(store.holder).toBe("b");
    expect(a.e.isLeader).toBe(false);
  });

  it("releases the Lease when stopped, so another takes over without waiting for it to expire", async () => {
    const store = new LeaseStore();
    const clock = new FakeClock();
    const a = elector("a", store, clock);
    await settle();
    const b = elector("b", store, clock);
    await clock.advance(RETRY_MS);
    await a.e.stop();
    expect(store.holder).toBe("");
    const stoppedAt = clock.ms;
    await clock.advance(2 * RETRY_MS);
    expect(b.e.isLeader).toBe(true);
    expect(clock.ms - stoppedAt).toBeLessThan(LEASE_MS);
  });
});
