import { CREDITS_INDEX } from "../../domain/analytics/usage.ts";
import type { UsageBatch } from "../../store/analytics/usage-writes.ts";

// The counting of verdicts on the request's path (docs/analytics.md): a map of the current minute's
// counters by lineage, beside the policy meter's leases. A request adds to an array of eight numbers (seven outcomes, the credits);
// only the first request of a key in a minute makes one. Earlier minutes wait whole for the writer.

const SLOTS = CREDITS_INDEX + 1;
const MINUTE_MS = 60_000;
/**
 * How many key-minutes may wait while writes fail (some 150 bytes each: docs/scaling.md, "Memory"):
 * past it, a batch given back loses its oldest minutes, so that a long database outage cannot exhaust
 * the heap. Writes that succeed never come near it: they take what 10 s counted.
 */
export const MAX_WAITING = 200_000;

type Minute = { minute: number; counts: Map<number, number[]> };

export class UsageCounter {
  readonly #nowMs: () => number;
  #current: Minute = { minute: -1, counts: new Map() };
  /** Minutes closed since the last take, oldest first (a clock set back adds the same minute again: the write sums them). */
  #closed: Minute[] = [];

  /** `nowMs`: Date.now, or a test's clock. */
  constructor(nowMs: () => number) {
    this.#nowMs = nowMs;
  }

  /** One verdict for the key of `lineage`: outcome `outcome` (an index of OUTCOMES), `credits` spent. */
  count(lineage: number, outcome: number, credits: number): void {
    const minute = Math.floor(this.#nowMs() / MINUTE_MS);
    if (minute !== this.#current.minute) this.#turn(minute);
    let counts = this.#current.counts.get(lineage);
    if (counts === undefined) {
      counts = [0, 0, 0, 0, 0, 0, 0, 0];
      this.#current.counts.set(lineage, counts);
    }
    counts[outcome]! += 1;
    counts[CREDITS_INDEX]! += credits;
  }

  #turn(minute: number): void {
    if (this.#current.counts.size > 0) this.#closed.push(this.#current);
    this.#current = { minute, counts: new Map() };
  }

  /** How many key-minutes wait for a write. */
  get pending(): number {
    let n = this.#current.counts.size;
    for (const m of this.#closed) n += m.counts.size;
    return n;
  }

  /** Everything counted so far, as rows, counting from zero again; undefined when nothing was counted. */
  take(): UsageBatch | undefined {
    const minutes = this.#current.counts.size > 0 ? [...this.#closed, this.#current] : this.#closed;
    this.#closed = [];
    this.#current = { minute: this.#current.minute, counts: new Map() };
    if (minutes.length === 0) return undefined;
    const batch: UsageBatch = { lineages: [], minutes: [], counts: Array.from({ length: SLOTS }, () => []) };
    for (const { minute, counts } of minutes) {
      for (const [lineage, c] of counts) {
        batch.lineages.push(lineage);
        batch.minutes.push(minute);
        for (let i = 0; i < SLOTS; i++) batch.counts[i]!.push(c[i]!);
      }
    }
    return batch;
  }

  /** A batch whose write failed, counted again, to be written with the next; returns how many of its key-minutes were dropped over MAX_WAITING, oldest first. */
  giveBack(batch: UsageBatch): number {
    const given = new Map<number, Map<number, number[]>>();
    batch.lineages.forEach((lineage, row) => {
      const minute = batch.minutes[row]!;
      let counts = given.get(minute);
      if (counts === undefined) given.set(minute, (counts = new Map()));
      counts.set(lineage, batch.counts.map((column) => column[row]!));
    });
    this.#closed.unshift(...[...given].sort(([a], [b]) => a - b).map(([minute, counts]) => ({ minute, counts })));
    let dropped = 0;
    while (this.pending > MAX_WAITING && this.#closed.length > 0) dropped += this.#closed.shift()!.counts.size;
    return dropped;
  }
}
