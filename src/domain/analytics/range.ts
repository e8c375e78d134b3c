import type { Retention } from "./retention.ts";
import { emptyBucket, INTERVAL_MS, type Bucket, type Interval } from "./usage.ts";

// The range of an analytics answer (docs/analytics.md, "Ranges"): buckets start at multiples of the
// interval in UTC; `from` is rounded down to one and `to` (exclusive) up to one; every interval of the
// range gets a bucket, zeros included, oldest first.
export const MAX_BUCKETS = 2_000;
/** Buckets in a range with no `from`: the current one and the 24 before it. */
export const DEFAULT_BUCKETS = 25;

export interface RangeQuery {
  interval?: Interval | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

export interface Range {
  interval: Interval;
  from: Date;
  /** Exclusive. */
  to: Date;
}

const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;
const ceilTo = (ms: number, step: number) => Math.ceil(ms / step) * step;

/**
 * The range a query asks for, at `now`; a string says why it is refused (a 400). Defaults: hours; `to`
 * the end of the current interval; `from` 24 intervals before the start of the last one.
 */
export function rangeOf(query: RangeQuery, now: Date, retention: Retention): Range | string {
  const interval = query.interval ?? "hour";
  const step = INTERVAL_MS[interval];
  const to = query.to ? ceilTo(query.to.getTime(), step) : floorTo(now.getTime(), step) + step;
  const from = query.from ? floorTo(query.from.getTime(), step) : to - DEFAULT_BUCKETS * step;
  if (from >= to || (query.from && query.to && query.from.getTime() >= query.to.getTime())) return "from must be before to.";
  const buckets = (to - from) / step;
  if (buckets > MAX_BUCKETS) return `The range holds ${buckets} ${interval}s; at most ${MAX_BUCKETS} buckets are answered.`;
  if (from < floorTo(now.getTime() - retention[interval], step)) {
    return `${interval[0]!.toUpperCase()}${interval.slice(1)}s are kept for ${durationText(retention[interval])}: from is older than that.`;
  }
  return { interval, from: new Date(from), to: new Date(to) };
}

/** Every bucket of the range, oldest first: those given (by their start), zeros for the others. */
export function filledBuckets(range: Range, given: readonly Bucket[]): Bucket[] {
  const step = INTERVAL_MS[range.interval];
  const byStart = new Map(given.map((b) => [b.start.getTime(), b]));
  const buckets: Bucket[] = [];
  for (let t = range.from.getTime(); t < range.to.getTime(); t += step) buckets.push(byStart.get(t) ?? emptyBucket(new Date(t)));
  return buckets;
}

const durationText = (ms: number) => (ms % INTERVAL_MS.day === 0 ? `${ms / INTERVAL_MS.day} days` : `${ms / INTERVAL_MS.hour} hours`);
