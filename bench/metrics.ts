import type autocannon from "autocannon";
import { load, type LoadResult } from "./load.ts";
import { freePort, startKeyplane, type KeyplaneEnv, type Metered, type Server } from "./processes.ts";
import { inTurn, median, round, roundsDetail } from "./rounds.ts";

// The metrics phase (bench/README.md): what keeping Prometheus metrics costs the hot path. A second
// keyplane on the same database runs with KEYPLANE_METRICS_PORT and is scraped every second while it
// is loaded; the first, without, is measured in turn with it, in rounds (bench/rounds.ts), for GET
// /keys/self and for GET /auth on a customer path (as in the gateway phase). Each figure is the median
// of the rounds' metered throughput ÷ the mean of the unmetered runs either side; the details add each
// server's CPU per request, which other work on the machine disturbs less.

export interface MetricsTools {
  connections: number;
  /** Rounds of the metered server against the unmetered one. */
  rounds: number;
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
    const run = (server: Server, requests: autocannon.Request[], duration: number) => load({ url: server.url, connections: t.connections, duration, requests });
    const ratio = async (what: string, requests: autocannon.Request[]) => {
      const seconds = t.seconds / 2;
      t.say(`metrics: ${what}, without metrics and with (scraped every second) in turn, ${t.rounds} rounds of ${seconds} s each`);
      await run(off, requests, t.warmupSeconds);
      await run(on, requests, t.warmupSeconds);
      const us = { off: [] as number[], on: [] as number[] };
      const measured = async (name: string, server: Server, side: keyof typeof us) => {
        const { result, usPerRequest } = await t.metered(name, server, () => run(server, requests, seconds));
        t.expectAnswers(name, result, ["200"]);
        us[side].push(usPerRequest);
        return result;
      };
      const rounds = await inTurn(
        t.rounds,
        (i) => measured(`metrics: ${what}, without ${i}`, off, "off"),
        (i) => scraped(() => measured(`metrics: ${what}, with ${i}`, on, "on")),
      );
      return {
        value: round(median(rounds.ratios)),
        detail: `${roundsDetail(rounds)}; server CPU per request ${round(median(us.on), 1)} vs ${round(median(us.off), 1)} µs (medians)`,
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
