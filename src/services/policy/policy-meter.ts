import type { Logger } from "pino";
import type { Credits, PolicyLevel } from "../../domain/policy/policy.ts";
import { lastRefillAt } from "../../domain/policy/limits/refill.ts";
import { windowStart } from "../../domain/policy/limits/window.ts";
import type { ListenState, Queryable } from "../../store/database.ts";
import { balanceGrant, balanceReturn, windowGrant, type BalanceGrant, type Grant, type Refilling, type Unused } from "../../store/policy/policy-counters.ts";
import type { Maybe } from "../maybe.ts";

// Rate limits and credits counted exactly across processes, through leases (docs/adr/0013): this
// process admits a request only from units the database handed to it and to no other, in memory, and
// asks for more when a counter runs short. A request counted by several counters (its customer's limit,
// its key's, a balance) is admitted only when the process holds enough of every one, and then charged
// to all of them at once, synchronously: a refused request charges nothing. While the database cannot
// be reached, only what the process holds is admitted; a request that needs more fails (503).

/** A counter a request is judged by: one window of a rate limit, or a balance. */
export type CounterSpec =
  | { kind: "window"; holder: string; scope: PolicyLevel; id?: number | undefined; name: string; limit: number; windowSeconds: number }
  | { kind: "balance"; holder: string; scope: PolicyLevel; credits: Credits };

export interface Reading {
  spec: CounterSpec;
  /** What the counter could still admit before this request: units held here, and what the database had left at its last answer. */
  available: number;
}

export interface MeterOutcome {
  admitted: boolean;
  readings: Reading[];
}

export interface MeterStats {
  grants: Record<CounterSpec["kind"], { taken: number; short: number; failed: number }>;
  /** Unspent credits handed back to balances. */
  returned: number;
  held: Record<CounterSpec["kind"], number>;
  counters: number;
}

/** The statements of store/policy/policy-counters.ts: what the meter asks of the database (tests give it their own). */
export interface CounterStore {
  windowGrant(holder: string, name: string, windowStart: number, want: number, limit: number): Promise<Grant>;
  balanceGrant(holder: string, want: number, refilling: Refilling, initial: { remaining: number; at: Date }): Promise<BalanceGrant>;
  balanceReturn(unused: readonly Unused[]): Promise<void>;
}

export function sqlCounters(db: Queryable): CounterStore {
  return {
    windowGrant: (...args) => windowGrant(db, ...args),
    balanceGrant: (...args) => balanceGrant(db, ...args),
    balanceReturn: (unused) => balanceReturn(db, unused),
  };
}

export interface PolicyMeterOptions {
  /** Unspent credits go back after this long without use (1 s). */
  idleMs?: number;
}

/** How often leases unused for the idle time give back their credits. */
export const METER_SWEEP_MS = 250;
/** A lease doubles when used up this soon, and halves when it lasted longer than IDLE (docs/adr/0013). */
const QUICK_MS = 250;
const MAX_LEASE = 1_000_000_000;
/** How many times one request asks again when other requests took what was granted before it could. */
const MAX_ROUNDS = 64;
/** A counter nothing used for this long is forgotten. */
const FORGET_MS = 60_000;

class Counter {
  /** Units this process holds, not spent. */
  held = 0;
  /** What the database had left at its last answer, for the current window or period; undefined: not asked yet. */
  left: number | undefined;
  answeredAt = -Infinity;
  size: number;
  takenAt = -Infinity;
  usedAt: number;
  pending: Promise<void> | undefined;
  /** Moves when the counter's lease is dropped: a grant under way then is not added to it. */
  epoch = 0;
  /** A window's start, or a balance's refill period (0 without refills), that `held` and `left` are of. */
  span = NaN;
  generation = -1;
  /** No longer in the meter's map (unused for a minute): a spec that still names it looks again. */
  forgotten = false;

  readonly id: string;
  spec: CounterSpec;

  constructor(id: string, spec: CounterSpec, need: number, now: number) {
    this.id = id;
    this.spec = spec;
    this.size = need;
    this.usedAt = now;
  }

  /** Known to have less than `need` left: asking again would not help. A cost above a window's limit never fits. */
  exhausted(need: number): boolean {
    if (this.held >= need) return false;
    return (this.left !== undefined && this.held + this.left < need) || (this.spec.kind === "window" && need > this.spec.limit);
  }
}

export class PolicyMeter {
  readonly #store: CounterStore;
  readonly #clock: () => Date;
  readonly #log: Logger;
  readonly #idleMs: number;
  readonly #counters = new Map<string, Counter>();
  readonly #bySpec = new WeakMap<CounterSpec, Counter>();
  #listening = true;
  readonly #stats: MeterStats = {
    grants: { window: { taken: 0, short: 0, failed: 0 }, balance: { taken: 0, short: 0, failed: 0 } },
    returned: 0,
    held: { window: 0, balance: 0 },
    counters: 0,
  };

  constructor(store: CounterStore, clock: () => Date, log: Logger, { idleMs = 1_000 }: PolicyMeterOptions = {}) {
    this.#store = store;
    this.#clock = clock;
    this.#log = log;
    this.#idleMs = idleMs;
  }

  /** Admits the request and charges `cost` to every counter, or refuses it and charges none; at once when this process holds enough. */
  charge(specs: readonly CounterSpec[], cost: number): Maybe<MeterOutcome> {
    return this.#settle(specs, cost, true, 0);
  }

  /** What the counters could admit, as charge would judge it, charging nothing (a request refused before them). */
  read(specs: readonly CounterSpec[], cost: number): Maybe<MeterOutcome> {
    return this.#settle(specs, cost, false, 0);
  }

  #settle(specs: readonly CounterSpec[], cost: number, charge: boolean, round: number, failure?: unknown): Maybe<MeterOutcome> {
    const need = cost >= 1 ? cost : 1;
    const now = this.#clock().getTime();
    const counters: Counter[] = [];
    let short = false;
    for (const spec of specs) {
      const c = this.#counter(spec, need, now);
      counters.push(c);
      if (c.held < need) short = true;
    }
    if (short) {
      const exhausted = counters.some((c) => c.exhausted(need));
      // Known refused: only counters never asked are asked, so that the answer can say what each has left.
      const ask = counters.filter((c) => c.held < need && (exhausted ? c.left === undefined : !c.exhausted(need)));
      if (ask.length > 0 && failure === undefined && round < MAX_ROUNDS) {
        return Promise.allSettled(ask.map((c) => this.#lease(c, need, now))).then((results) => {
          const failed = results.find((r) => r.status === "rejected");
          return this.#settle(specs, cost, charge, round + 1, failed?.reason);
        });
      }
      // The database could not be asked: only what this process holds.
      if (ask.length > 0 && failure !== undefined) throw failure;
    }
    const readings = counters.map((c) => ({ spec: c.spec, available: c.held + (c.left ?? 0) }));
    if (!short && charge) {
      for (const c of counters) {
        c.held -= cost;
        c.usedAt = now;
      }
    }
    return { admitted: !short, readings };
  }

  /** The counter of a spec, rolled on to the current window or refill period. */
  #counter(spec: CounterSpec, need: number, now: number): Counter {
    let c = this.#bySpec.get(spec);
    if (c === undefined || c.forgotten) {
      // Specs are made once per key's policies (policy-check.ts): the look-up by content is done once for each.
      const id = spec.kind === "window" ? `${spec.holder}\n${spec.name}\n${spec.limit}\n${spec.windowSeconds}` : spec.holder;
      c = this.#counters.get(id);
      if (c === undefined) this.#counters.set(id, (c = new Counter(id, spec, need, now)));
      this.#bySpec.set(spec, c);
    }
    c.spec = spec;
    const span = spec.kind === "window" ? windowStart(now, spec.windowSeconds) : spec.credits.refill ? lastRefillAt(new Date(now), spec.credits.refill).getTime() : 0;
    if (span !== c.span) {
      // A new window, or a refill since the lease was taken: what was held was of the last one.
      c.span = span;
      c.held = 0;
      c.left = undefined;
      c.epoch++;
    } else if (spec.kind === "balance") {
      // A balance may have changed meanwhile; an announcement would have dropped the lease, but while
      // announcements may be missed a lease is kept no longer than the idle time, and what the
      // database said it had left is asked again after as long.
      if (!this.#listening && now - c.takenAt > this.#idleMs) this.#drop(c);
      else if (now - c.answeredAt > this.#idleMs && c.held < need) c.left = undefined;
    }
    return c;
  }

  #lease(c: Counter, need: number, now: number): Promise<void> {
    if (c.pending) return c.pending;
    const lived = now - c.takenAt;
    if (lived < QUICK_MS) c.size = Math.min(MAX_LEASE, c.size * 2);
    else if (lived > this.#idleMs && Number.isFinite(lived)) c.size = Math.max(1, Math.floor(c.size / 2));
    const lacking = need - c.held;
    const spec = c.spec;
    const cap = c.left ?? (spec.kind === "window" ? spec.limit : Infinity);
    let want = Math.max(lacking, Math.min(c.size, Math.ceil(cap / 8)));
    if (c.left !== undefined) want = Math.min(want, Math.max(lacking, c.left));
    if (spec.kind === "window") want = Math.min(want, spec.limit);
    const epoch = c.epoch;
    const started = this.#grant(c, want, epoch, now).finally(() => {
      if (c.pending === started) c.pending = undefined;
    });
    c.pending = started;
    return started;
  }

  async #grant(c: Counter, want: number, epoch: number, now: number): Promise<void> {
    const spec = c.spec;
    const stats = this.#stats.grants[spec.kind];
    if (spec.kind === "window") {
      let grant;
      try {
        grant = await this.#store.windowGrant(spec.holder, spec.name, c.span / 1000, want, spec.limit);
      } catch (error) {
        stats.failed++;
        throw error;
      }
      stats[grant.taken ? "taken" : "short"]++;
      if (epoch !== c.epoch) return; // a new window began meanwhile: those units were of the last one
      if (grant.taken) {
        c.held += want;
        c.takenAt = now;
      }
      c.left = grant.left;
      c.answeredAt = now;
      return;
    }
    const refill = spec.credits.refill;
    const refillAt = refill ? new Date(c.span) : null;
    let grant;
    try {
      grant = await this.#store.balanceGrant(spec.holder, want, { refillAt, amount: refill?.amount ?? 0 }, { remaining: spec.credits.remaining, at: refillAt ?? new Date(now) });
    } catch (error) {
      stats.failed++;
      throw error;
    }
    stats[grant.taken ? "taken" : "short"]++;
    if (epoch !== c.epoch) {
      // Dropped meanwhile (the balance was set, or a refill came): what this took goes back, if it still may.
      if (grant.taken) this.#giveBack([{ holder: spec.holder, units: want, generation: grant.generation }]);
      return;
    }
    if (grant.taken) {
      // Units of an older generation are void: the balance was set, or refilled, since.
      if (grant.generation !== c.generation) c.held = 0;
      c.held += want;
      c.generation = grant.generation;
      c.takenAt = now;
    }
    c.left = grant.left ?? 0;
    c.answeredAt = now;
  }

  /** A holder's balance was set or changed (announced on keyplane_credits): its lease is given up. */
  dropBalance(holder: string): void {
    const c = this.#counters.get(holder);
    if (c !== undefined) this.#drop(c);
  }

  /** The announcement connection's state: restored, every balance's lease is given up, as an announcement may have been missed. */
  listening(state: ListenState): void {
    this.#listening = state === "restored";
    if (this.#listening) for (const c of this.#counters.values()) if (c.spec.kind === "balance") this.#drop(c);
  }

  #drop(c: Counter): void {
    if (c.held > 0) this.#giveBack([{ holder: c.spec.holder, units: c.held, generation: c.generation }]);
    c.held = 0;
    c.left = undefined;
    c.epoch++;
  }

  #giveBack(unused: Unused[]): void {
    this.#return(unused).catch((error: unknown) => this.#log.warn({ err: error, balances: unused.length }, "could not give back unspent credits; they count as spent"));
  }

  async #return(unused: Unused[]): Promise<void> {
    if (unused.length === 0) return;
    await this.#store.balanceReturn(unused);
    this.#stats.returned += unused.reduce((n, u) => n + u.units, 0);
  }

  /**
   * Gives back the credits of leases unused for the idle time, in one statement, and forgets counters
   * unused for a minute: run every few hundred milliseconds.
   */
  async sweep(): Promise<void> {
    const now = this.#clock().getTime();
    const unused: Unused[] = [];
    for (const [id, c] of this.#counters) {
      if (c.pending) continue;
      if (c.spec.kind === "balance" && c.held > 0 && now - c.usedAt >= this.#idleMs) {
        unused.push({ holder: c.spec.holder, units: c.held, generation: c.generation });
        c.held = 0;
        c.left = undefined;
        c.epoch++;
      }
      if (now - c.usedAt > FORGET_MS && (c.spec.kind === "window" || c.held === 0)) {
        c.forgotten = true;
        this.#counters.delete(id);
      }
    }
    await this.#return(unused);
  }

  /** Gives back every unspent credit: the process stops. */
  async close(): Promise<void> {
    const unused: Unused[] = [];
    for (const c of this.#counters.values()) {
      if (c.spec.kind !== "balance" || c.held <= 0) continue;
      unused.push({ holder: c.spec.holder, units: c.held, generation: c.generation });
      c.held = 0;
      c.epoch++;
    }
    await this.#return(unused);
  }

  stats(): MeterStats {
    const held = { window: 0, balance: 0 };
    for (const c of this.#counters.values()) held[c.spec.kind] += c.held;
    return { ...this.#stats, grants: structuredClone(this.#stats.grants), held, counters: this.#counters.size };
  }
}

