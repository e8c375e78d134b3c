import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { INTERVALS, type Interval } from "../../domain/analytics/usage.ts";
import { partitionsBetween, usagePartitionCreate } from "../../store/analytics/partitions.ts";
import { usageRecord, type UsageBatch } from "../../store/analytics/usage-writes.ts";
import type { AnalyticsNeeds } from "./needs.ts";
import type { UsageCounter } from "./usage-counter.ts";

// The writer of a process's counts (docs/analytics.md, "Writing"): every write is one statement, however
// many keys were used, after the partitions it needs (made once per process, normally ahead by the
// upkeep). A failed write loses nothing: its rows are counted again and go with the next.

interface WriterMetrics {
  rows: Counter;
  failures: Counter;
  duration: Histogram;
}

export class UsageWriter {
  readonly #needs: AnalyticsNeeds;
  readonly #counter: UsageCounter;
  /** The partitions this process knows exist. */
  readonly known = new Set<string>();
  readonly #metrics: WriterMetrics | undefined;
  #writing: Promise<void> | undefined;

  constructor(needs: AnalyticsNeeds, counter: UsageCounter) {
    this.#needs = needs;
    this.#counter = counter;
    this.#metrics = needs.registry && writerMetrics(needs.registry, counter);
  }

  /** Writes what was counted since the last write; one write at a time. */
  write(): Promise<void> {
    this.#writing ??= this.#write().finally(() => (this.#writing = undefined));
    return this.#writing;
  }

  async #write(): Promise<void> {
    const batch = this.#counter.take();
    if (batch === undefined) return;
    const startedAt = performance.now();
    const now = this.#needs.clock().getTime();
    const cutoffs = Object.fromEntries(INTERVALS.map((i) => [i, now - this.#needs.retention[i]])) as Record<Interval, number>;
    try {
      await this.#partitionsFor(batch, cutoffs);
      await usageRecord(this.#needs.db, batch, { minute: cutoffs.minute / 1000, hour: cutoffs.hour / 1000, day: cutoffs.day / 1000 });
    } catch (error) {
      const dropped = this.#counter.giveBack(batch);
      this.#metrics?.failures.inc();
      this.#needs.log.warn({ err: error, rows: batch.lineages.length, dropped }, "could not write usage analytics; will retry");
      return;
    }
    this.#metrics?.rows.inc(batch.lineages.length);
    this.#metrics?.duration.observe((performance.now() - startedAt) / 1000);
  }

  async #partitionsFor(batch: UsageBatch, cutoffs: Record<Interval, number>): Promise<void> {
    let [first, last] = [Infinity, -Infinity];
    for (const m of batch.minutes) [first, last] = [Math.min(first, m), Math.max(last, m)];
    for (const interval of INTERVALS) {
      for (const p of partitionsBetween(interval, Math.max(first * 60_000, cutoffs[interval]), last * 60_000)) {
        if (this.known.has(p.name)) continue;
        await usagePartitionCreate(this.#needs.db, p);
        this.known.add(p.name);
      }
    }
  }
}

function writerMetrics(registry: Registry, counter: UsageCounter): WriterMetrics {
  const registers = [registry];
  new Gauge({ name: "keyplane_analytics_pending_rows", help: "Key-minutes of usage analytics counted by this process and not yet written", registers,
    collect() {
      this.set(counter.pending);
    } });
  return {
    rows: new Counter({ name: "keyplane_analytics_rows_written_total", help: "Key-minutes of usage analytics written to the database", registers }),
    failures: new Counter({ name: "keyplane_analytics_write_failures_total", help: "Writes of usage analytics that failed (their counts go with the next)", registers }),
    duration: new Histogram({ name: "keyplane_analytics_write_duration_seconds", help: "How long a write of usage analytics took, partitions included", registers,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] }),
  };
}
