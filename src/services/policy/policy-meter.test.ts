import pino from "pino";
import { describe, expect, it } from "vitest";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { Credits } from "../../domain/policy/policy.ts";
import type { Unused } from "../../store/policy/policy-counters.ts";
import { PolicyMeter, type CounterSpec, type CounterStore, type MeterOutcome } from "./policy-meter.ts";

// The meter over an in-memory store that keeps the promises of store/policy/policy-counters.ts (a grant is
// all it asks for or nothing, never past a limit or below zero; a return only while the generation
// holds), on a clock the test moves: leases, their sizes, and what a refused request charges.

class MemoryCounters implements CounterStore {
  readonly windows = new Map<string, number>();
  readonly balances = new Map<string, { remaining: number; refilledAt: number; generation: number }>();
  statements = 0;
  down = false;

  async windowGrant(holder: string, name: string, windowStart: number, want: number, limit: number) {
    this.#ask();
    await Promise.resolve();
    const id = `${holder}/${name}/${windowStart}`;
    const granted = this.windows.get(id) ?? 0;
    const taken = granted + want <= limit;
    if (taken) this.windows.set(id, granted + want);
    return { taken, left: limit - (taken ? granted + want : granted) };
  }

  async balanceGrant(holder: string, want: number, refilling: { refillAt: Date | null; amount: number }, initial: { remaining: number; at: Date }) {
    this.#ask();
    await Promise.resolve();
    let b = this.balances.get(holder);
    if (!b) this.balances.set(holder, (b = { remaining: initial.remaining, refilledAt: initial.at.getTime(), generation: 0 }));
    const due = refilling.refillAt !== null && b.refilledAt < refilling.refillAt.getTime();
    const remaining = due ? refilling.amount : b.remaining;
    if (remaining < want) return { taken: false, left: remaining, generation: b.generation };
    if (due) Object.assign(b, { refilledAt: refilling.refillAt!.getTime(), generation: b.generation + 1 });
    b.remaining = remaining - want;
    return { taken: true, left: b.remaining, generation: b.generation };
  }

  async balanceReturn(unused: readonly Unused[]) {
    this.#ask();
    for (const u of unused) {
      const b = this.balances.get(u.holder);
      if (b && b.generation === u.generation) b.remaining += u.units;
    }
  }

  /** PUT .../credits with `remaining`: a new generation. */
  set(holder: string, remaining: number) {
    const b = this.balances.get(holder)!;
    Object.assign(b, { remaining, generation: b.generation + 1 });
  }

  #ask() {
    this.statements++;
    if (this.down) throw new StoreUnavailable("test");
  }
}

const log = pino({ level: "silent" });

function setup(start = "2026-11-23T10:00:00.000Z") {
  let now = new Date(start).getTime();
  const store = new MemoryCounters();
  const clock = () => new Date(now);
  return { store, meter: new PolicyMeter(store, clock, log), peer: new PolicyMeter(store, clock, log), advance: (ms: number) => void (now += ms), set: (t: string) => void (now = new Date(t).getTime()) };
}

const window = (name: string, limit: number, windowSeconds = 3600, holder = "customer:1"): CounterSpec => ({ kind: "window", holder, scope: "customer", name, limit, windowSeconds });
const balance = (credits: Credits, holder = "key:7"): CounterSpec => ({ kind: "balance", holder, scope: "key", credits });
const available = (o: MeterOutcome) => o.readings.map((r) => r.available);

describe("PolicyMeter", () => {
  it("admits exactly a window's limit of 200 requests at once, and then refuses without asking again", async () => {
    const { store, meter } = setup();
    const specs = [window("calls", 10)];
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => meter.charge(specs, 1)));
    expect(outcomes.filter((o) => o.admitted)).toHaveLength(10);
    expect(store.windows.get("customer:1/calls/1795428000")).toBe(10);
    const asked = store.statements;
    expect((await meter.charge(specs, 1)).admitted).toBe(false);
    expect(store.statements).toBe(asked);
  });

  it("never lets two processes on one store past a limit, and admits nearly all of it under three times the demand", async () => {
    const { store, meter, peer } = setup();
    const specs = [window("calls", 1000)];
    let admitted = 0;
    // Waves of concurrent requests on each process in turn, 3,000 in all.
    for (let wave = 0; wave < 30; wave++) {
      const on = wave % 2 === 0 ? meter : peer;
      const outcomes = await Promise.all(Array.from({ length: 100 }, () => on.charge(specs, 1)));
      admitted += outcomes.filter((o) => o.admitted).length;
    }
    expect(admitted).toBeLessThanOrEqual(1000);
    expect(admitted).toBeGreaterThanOrEqual(950);
    expect(store.windows.get("customer:1/calls/1795428000")).toBeLessThanOrEqual(1000);
  });

  it("charges all of a request's counters or none: a refusal at one leaves the others as they were", async () => {
    const { meter } = setup();
    const specs = [window("calls", 5), window("burst", 1, 60, "key:7"), balance({ remaining: 3 })];
    expect(available(await meter.charge(specs, 1))).toEqual([5, 1, 3]);
    const refused = await meter.charge(specs, 1);
    expect(refused.admitted).toBe(false);
    expect(available(refused)).toEqual([4, 0, 2]);
    expect(available(await meter.read(specs, 1))).toEqual([4, 0, 2]);
  });

  it("refuses a cost of 0 where a cost of 1 would be refused, and charges nothing for it", async () => {
    const { meter } = setup();
    const specs = [window("calls", 2)];
    expect(await meter.charge(specs, 0)).toMatchObject({ admitted: true, readings: [{ available: 2 }] });
    expect(await meter.charge(specs, 2)).toMatchObject({ admitted: true, readings: [{ available: 2 }] });
    expect(await meter.charge(specs, 0)).toMatchObject({ admitted: false, readings: [{ available: 0 }] });
  });

  it("refuses a cost above a window's limit and charges nothing for it", async () => {
    const { store, meter } = setup();
    const specs = [window("calls", 10)];
    expect(await meter.charge(specs, 11)).toMatchObject({ admitted: false });
    expect(await meter.charge(specs, 10)).toMatchObject({ admitted: true, readings: [{ available: 10 }] });
    expect(store.windows.get("customer:1/calls/1795428000")).toBe(10);
  });

  it("grows its leases with demand: at 10,000 requests a second, one statement per hundreds of requests", async () => {
    const { store, meter, advance } = setup();
    const specs = [window("calls", 1_000_000, 60), balance({ remaining: 1_000_000_000 })];
    for (let i = 0; i < 20_000; i++) {
      const outcome = meter.charge(specs, 1);
      expect((outcome instanceof Promise ? await outcome : outcome).admitted).toBe(true);
      advance(0.1);
    }
    expect(store.statements / 20_000).toBeLessThan(0.02);
  });

  it("answers at once, without a promise, while it holds enough", async () => {
    const { meter } = setup();
    const specs = [window("calls", 100)];
    await meter.charge(specs, 1);
    await meter.charge(specs, 1);
    expect(meter.charge(specs, 1)).not.toBeInstanceOf(Promise);
  });

  it("gives unspent credits back after a second unused and at close, but not into a balance set meanwhile", async () => {
    const { store, meter, advance } = setup();
    const specs = [balance({ remaining: 100 })];
    for (let i = 0; i < 5; i++) await meter.charge(specs, 1);
    const held = meter.stats().held.balance;
    expect(held).toBeGreaterThan(0);
    expect(store.balances.get("key:7")!.remaining).toBe(100 - 5 - held);
    advance(999);
    await meter.sweep();
    expect(store.balances.get("key:7")!.remaining).toBe(100 - 5 - held);
    advance(1);
    await meter.sweep();
    expect(store.balances.get("key:7")!.remaining).toBe(95);
    expect(meter.stats().held.balance).toBe(0);

    for (let i = 0; i < 5; i++) await meter.charge(specs, 1);
    store.set("key:7", 1000);
    await meter.close();
    expect(store.balances.get("key:7")!.remaining).toBe(1000);
  });

  it("gives up a balance's lease when told the balance changed, and asks again", async () => {
    const { store, meter } = setup();
    const specs = [balance({ remaining: 100 })];
    for (let i = 0; i < 5; i++) await meter.charge(specs, 1);
    store.set("key:7", 0);
    meter.dropBalance("key:7");
    await new Promise((r) => setTimeout(r, 0));
    expect(await meter.charge(specs, 1)).toMatchObject({ admitted: false, readings: [{ available: 0 }] });
    expect(store.balances.get("key:7")!.remaining).toBe(0);
  });

  it("while the database cannot be reached, admits what it holds and then fails with StoreUnavailable", async () => {
    const { store, meter } = setup();
    const specs = [window("calls", 1000)];
    for (let i = 0; i < 20; i++) await meter.charge(specs, 1);
    const held = meter.stats().held.window;
    expect(held).toBeGreaterThan(0);
    store.down = true;
    for (let i = 0; i < held; i++) expect(meter.charge(specs, 1)).toMatchObject({ admitted: true });
    await expect(meter.charge(specs, 1)).rejects.toBeInstanceOf(StoreUnavailable);
  });

  it("starts each window from nothing held, and each refill period from the refilled balance", async () => {
    const { store, meter, set } = setup("2026-11-23T23:59:59.000Z");
    const specs = [window("calls", 3, 60), balance({ remaining: 2, refill: { amount: 10, interval: "daily" } })];
    expect((await meter.charge(specs, 1)).admitted).toBe(true);
    expect((await meter.charge(specs, 1)).admitted).toBe(true);
    expect(await meter.charge(specs, 1)).toMatchObject({ admitted: false, readings: [{ available: 1 }, { available: 0 }] });
    set("2026-11-24T00:00:00.000Z");
    expect(await meter.charge(specs, 1)).toMatchObject({ admitted: true, readings: [{ available: 3 }, { available: 10 }] });
    expect(store.balances.get("key:7")!.generation).toBe(1);
  });

  it("keeps a balance's lease no longer than the idle time while announcements may be missed", async () => {
    const { store, meter, advance } = setup();
    const specs = [balance({ remaining: 100 })];
    for (let i = 0; i < 5; i++) await meter.charge(specs, 1);
    meter.listening("lost");
    store.set("key:7", 2);
    advance(500);
    expect((await meter.charge(specs, 1)).admitted).toBe(true);
    advance(600);
    await meter.charge(specs, 1);
    await meter.charge(specs, 1);
    expect(await meter.charge(specs, 1)).toMatchObject({ admitted: false, readings: [{ available: 0 }] });
  });
});
