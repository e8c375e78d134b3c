import type { Metric } from "prom-client";

// keyplane_http_request_duration_seconds, counted by keyplane itself. prom-client's Histogram builds,
// checks and hashes the label set on every observation: about a microsecond, a fifteenth of a cached
// verification. Here each series is found once, when its first request is answered, and an
// observation is a bucket search and three additions; prom-client writes the series out at scrape
// time as it writes its own histograms.
const NAME = "keyplane_http_request_duration_seconds";
/** The upper bounds of the buckets, in seconds. */
export const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One method and route's durations: a count per bucket (the last one: above every bound), their sum and count. */
export interface DurationSeries {
  readonly labels: { method: string; route: string };
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export class RequestDurations {
  readonly name = NAME;
  readonly help = "Time to answer an HTTP request";
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #series = new Map<string, DurationSeries>();

  /** The series of a method and route, made on first use. */
  series(method: string, route: string): DurationSeries {
    const id = `${method} ${route}`;
    let series = this.#series.get(id);
    if (!series) this.#series.set(id, (series = { labels: { method, route }, counts: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 }));
    return series;
  }

  observe(series: DurationSeries, seconds: number): void {
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]!) bucket++;
    series.counts[bucket]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The values as prom-client's registry writes them: cumulative buckets, +Inf, sum and count. */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] }> {
    const values = [];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let below = 0;
      for (const [i, bound] of BUCKETS.entries()) values.push({ labels: { le: bound, ...labels }, value: (below += counts[i]!), metricName: `${NAME}_bucket` });
      values.push({ labels: { le: "+Inf", ...labels }, value: count, metricName: `${NAME}_bucket` });
      values.push({ labels, value: sum, metricName: `${NAME}_sum` }, { labels, value: count, metricName: `${NAME}_count` });
    }
    return Promise.resolve({ name: NAME, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  reset(): void {
    this.#series.clear();
  }

  /** As the registry takes it: prom-client's Metric is a class, and this is a metric of that shape. */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}
