import type autocannon from "autocannon";
import { load, type LoadResult } from "./load.ts";
import { freePort, startKeyplane, type KeyplaneEnv, type Metered, type Server } from "./processes.ts";

// The metrics phase (bench/README.md): what keeping Prometheus metrics costs the hot path. A second
// keyplane on the same database runs with KEYPLANE_METRICS_PORT and is scraped every second while it
// is loaded; the first, without, is measured right before and right after it, for GET /keys/self and
// for GET /auth on a customer path (as in the gateway phase). Each figure is the metered throughput ÷
// the mean of the two unmetered runs; the details add each server's CPU per request, which other work
// on the machine disturbs less.

export interface MetricsTools {
  connections: number;
  seconds: number;
  warmupSeconds: number;
  say(text: string): void;
  expectAnswers(what: string, result: LoadResult, allowed: string[]): void;
  /** A load run whose CPU is counted, with the server's CPU microseconds per request. */
  metered(name: string, server: Metered, run: () => Promise<LoadResult>): Promise<{ result: LoadResult; usPerRequest: number }>;
}

export interface MetricsFigures {
  metricsSelfOnVsOff: number;
  metricsAuthOnVsOff: number;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export async function metricsPhase(t: MetricsTools, off: Server, env: KeyplaneEnv, fixture: { customer: string; token: string }): Promise<{ figures: MetricsFigures; details: Record<string, string>; scrapes: number }> {
  const { token } = fixture;
  const metricsPort = await freePort();
  const on = await startKeyplane("M", env, [], { KEYPLANE_METRICS_PORT: String(metricsPort) });
  let scrapes = 0;
  const scrapeUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const scraped = async <T>(run: () => Promise<T>): Promise<T> => {
    const timer = setInterval(() => void fetch(scrapeUrl).then(async (res) => {
      await res.text();
      if (res.status === 200) scrapes++;
    }, () => undefined), 1_000);
    try {
      return await run();
    } finally {
      clearInterval(timer);
    }
  };
  try {
    const self: autocannon.Request[] = [{ method: "GET", path: "/keys/self", headers: { authorization: `Bearer ${token}` } }];
    const auth: autocannon.Request[] = [{
      method: "GET", path: "/auth",
      headers: { authorization: `Bearer ${token}`, "x-original-method": "GET", "x-original-uri": `/customers/${fixture.customer}/invoices` },
    }];
    const run = (server: Server, requests: autocannon.Request[], duration = t.seconds) => load({ url: server.url, connections: t.connections, duration, requests });
    const ratio = async (what: string, requests: autocannon.Request[]) => {
      t.say(`metrics: ${what}, without metrics, with (scraped every second), without again; ${t.seconds} s each`);
      await run(off, requests, t.warmupSeconds);
      await run(on, requests, t.warmupSeconds);
      const before = await t.metered(`metrics: ${what}, without`, off, () => run(off, requests));
      const metered = await scraped(() => t.metered(`metrics: ${what}, with`, on, () => run(on, requests)));
      const after = await t.metered(`metrics: ${what}, without again`, off, () => run(off, requests));
      for (const [name, { result }] of [["without metrics", before], ["with metrics", metered], ["without metrics, again", after]] as const) {
        t.expectAnswers(`metrics: ${what} ${name}`, result, ["200"]);
      }
      const offRps = (before.result.requestsPerSecond + after.result.requestsPerSecond) / 2;
      const offUs = (before.usPerRequest + after.usPerRequest) / 2;
      return {
        value: round(metered.result.requestsPerSecond / offRps),
        detail: `${Math.round(metered.result.requestsPerSecond)} vs ${Math.round(offRps)} req/s; server CPU per request ${metered.usPerRequest} vs ${round(offUs, 1)} µs`,
      };
    };
    const selfRatio = await ratio("GET /keys/self", self);
    const authRatio = await ratio("GET /auth", auth);
    return {
      figures: { metricsSelfOnVsOff: selfRatio.value, metricsAuthOnVsOff: authRatio.value },
      details: { metricsSelfOnVsOff: selfRatio.detail, metricsAuthOnVsOff: authRatio.detail },
      scrapes,
    };
  } finally {
    await on.stop();
  }
}
