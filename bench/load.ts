import autocannon from "autocannon";

// One load run with autocannon, in this process (one thread). autocannon's own histogram keeps whole
// milliseconds; the benchmark also records every response time itself (a float, from hrtime) so p50
// and p99 keep their fractions, and so a mixed run can split them by status.

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds; or `amount`: a fixed number of requests. */
  duration?: number;
  amount?: number;
  /** Requests a second across all connections: a steady pace rather than as fast as answers come. */
  overallRate?: number;
  requests: autocannon.Request[];
}

export interface Latency {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface LoadResult {
  seconds: number;
  requests: number;
  requestsPerSecond: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Latency of every response, milliseconds. */
  latency: Latency;
  /** Every response's latency, milliseconds, in no order: what a figure over several runs is made of. */
  latencies: Float64Array;
  /** Latency by status code, milliseconds. */
  latencyByStatus: Record<string, Latency>;
  /** What autocannon itself reports (whole milliseconds). */
  autocannon: { requestsPerSecondMean: number; latencyP50: number; latencyP99: number; non2xx: number };
}

/** Nearest-rank percentile of sorted values (p in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function summarize(values: number[] | Float64Array): Latency {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/** Growable list of response times, per status code. */
class Recorder {
  readonly #byStatus = new Map<number, { values: Float64Array; n: number }>();

  add(status: number, ms: number): void {
    let slot = this.#byStatus.get(status);
    if (!slot) this.#byStatus.set(status, (slot = { values: new Float64Array(1 << 16), n: 0 }));
    if (slot.n === slot.values.length) {
      const bigger = new Float64Array(slot.values.length * 2);
      bigger.set(slot.values);
      slot.values = bigger;
    }
    slot.values[slot.n++] = ms;
  }

  all(): Float64Array {
    const total = [...this.#byStatus.values()].reduce((n, s) => n + s.n, 0);
    const out = new Float64Array(total);
    let at = 0;
    for (const s of this.#byStatus.values()) {
      out.set(s.values.subarray(0, s.n), at);
      at += s.n;
    }
    return out;
  }

  byStatus(): Record<string, Latency> {
    return Object.fromEntries([...this.#byStatus].map(([status, s]) => [String(status), summarize(s.values.subarray(0, s.n))]));
  }
}

export function load(options: LoadOptions): Promise<LoadResult> {
  const recorder = new Recorder();
  return new Promise((resolve, reject) => {
    const startedAt = performance.now();
    // Until the last answer, not until autocannon reports (it reports on its next one-second tick).
    let lastAnswerAt = startedAt;
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        ...(options.amount !== undefined ? { amount: options.amount } : { duration: options.duration ?? 1 }),
        requests: options.requests,
        ...(options.overallRate !== undefined && { overallRate: options.overallRate }),
        timeout: 10,
      },
      (error, result) => {
        if (error) return reject(error);
        const seconds = (lastAnswerAt - startedAt) / 1000;
        const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]));
        const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
        resolve({
          seconds,
          requests: answered,
          requestsPerSecond: answered / seconds,
          statuses,
          errors: result.errors,
          timeouts: result.timeouts,
          latency: summarize(recorder.all()),
          latencies: recorder.all(),
          latencyByStatus: recorder.byStatus(),
          autocannon: {
            requestsPerSecondMean: result.requests.mean,
            latencyP50: result.latency.p50,
            latencyP99: result.latency.p99,
            non2xx: result.non2xx,
          },
        });
      },
    );
    instance.on("response", (_client, statusCode, _bytes, ms) => {
      lastAnswerAt = performance.now();
      recorder.add(statusCode, ms);
    });
  });
}
