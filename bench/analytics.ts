import type autocannon from "autocannon";
import pg from "pg";
import { pino } from "pino";
import { DEFAULT_RETENTION, parseRetention } from "../src/domain/analytics/retention.ts";
import { UsageCounter } from "../src/services/analytics/usage-counter.ts";
import { usageUpkeep } from "../src/services/analytics/usage-upkeep.ts";
import { UsageWriter } from "../src/services/analytics/usage-writer.ts";
import { openPostgres } from "../src/store/postgres.ts";
import type { BenchDatabase } from "./database.ts";
import { load, percentile } from "./load.ts";
import type { MetricsTools } from "./metrics.ts";
import { startKeyplane, type KeyplaneEnv, type Server } from "./processes.ts";
import { inTurn, median, round, roundsDetail } from "./rounds.ts";

// The analytics phase (bench/README.md, docs/analytics.md): what counting every verdict costs the
// gateway's hot path, and what writing and keeping the counts costs the database.
// 1. GET /auth on a keyplane counting usage analytics, against GET /auth on one with
//    KEYPLANE_ANALYTICS=off, both new on the same database, in turn in rounds.
// 2. The writer itself, in this process on the bench database: `keys` keys each used once a minute
//    for some minutes of a fake clock, written every 10 s (a sixth of the keys each time): the
//    statements per write (per process per 10 s), how long a write takes, and, after VACUUM FULL,
//    the bytes on disk per key-hour of the minutes, hours and days kept.

/** As the metrics phase's: each run's CPU per request is kept too, which other work on the machine disturbs less than throughput. */
export type AnalyticsTools = MetricsTools;

export interface AnalyticsFigures {
  analyticsAuthOnVsOff: number;
  analyticsStatementsPerWrite: number;
  analyticsWriteMs: number;
  analyticsBytesPerKeyHour: number;
}

export async function analyticsPhase(
  t: AnalyticsTools, env: KeyplaneEnv, db: BenchDatabase, fixture: { customer: string; token: string }, keys: number, minutes: number,
): Promise<{ figures: AnalyticsFigures; details: Record<string, string>; writer: WriterRun }> {
  const on = await startKeyplane("analytics-on", env);
  const off = await startKeyplane("analytics-off", env, [], { KEYPLANE_ANALYTICS: "off" });
  let rounds;
  const us = { off: [] as number[], on: [] as number[] };
  try {
    const auth: autocannon.Request[] = [
      { method: "GET", path: "/auth", headers: { authorization: `Bearer ${fixture.token}`, "x-original-method": "GET", "x-original-uri": `/customers/${fixture.customer}/invoices` } },
    ];
    const run = (url: string, duration: number) => load({ url, connections: t.connections, duration, requests: auth });
    t.say(`analytics: warm-up ${t.warmupSeconds} s on each`);
    await run(on.url, t.warmupSeconds);
    await run(off.url, t.warmupSeconds);
    const seconds = t.seconds / 2;
    t.say(`analytics: GET /auth with KEYPLANE_ANALYTICS=off and on in turn, ${t.rounds} rounds of ${seconds} s each, ${t.connections} connections`);
    const measured = async (name: string, server: Server, side: keyof typeof us) => {
      const { result, usPerRequest } = await t.metered(name, server, () => run(server.url, seconds));
      t.expectAnswers(name, result, ["200"]);
      us[side].push(usPerRequest);
      return result;
    };
    rounds = await inTurn(t.rounds, (i) => measured(`GET /auth, analytics off ${i}`, off, "off"), (i) => measured(`GET /auth, analytics on ${i}`, on, "on"));
  } finally {
    await on.stop();
    await off.stop();
  }
  t.say(`analytics: ${keys} keys used once a minute for ${minutes} minutes, written every 10 s`);
  const writer = await writerRun(db, keys, minutes);
  return {
    figures: {
      analyticsAuthOnVsOff: round(median(rounds.ratios)),
      analyticsStatementsPerWrite: writer.statementsPerWrite,
      analyticsWriteMs: writer.writeMs.p50,
      analyticsBytesPerKeyHour: writer.bytesPerKeyHour.total,
    },
    details: {
      analyticsAuthOnVsOff: `${roundsDetail(rounds)}; server CPU per request ${round(median(us.on), 1)} vs ${round(median(us.off), 1)} µs (medians)`,
      analyticsStatementsPerWrite: `${writer.writes} writes of ${keys} keys used once a minute, each of about ${Math.round(keys / 6)} key-minutes: at most ${writer.statementsPerWrite} statement each`,
      analyticsWriteMs: `p50 ${writer.writeMs.p50} ms, max ${writer.writeMs.max} ms a write of about ${Math.round(keys / 6)} key-minutes into minutes, hours and days`,
      analyticsBytesPerKeyHour: `${writer.bytesPerKeyHour.minutes} in minutes (60 rows), ${writer.bytesPerKeyHour.hours} in hours, ${writer.bytesPerKeyHour.days} in days (a day's row over 24); ${writer.millionKeysADay}`,
    },
    writer,
  };
}

export interface WriterRun {
  writes: number;
  statementsPerWrite: number;
  writeMs: { p50: number; max: number };
  bytesPerKeyHour: { minutes: number; hours: number; days: number; total: number };
  millionKeysADay: string;
}

async function writerRun(bench: BenchDatabase, keys: number, minutes: number): Promise<WriterRun> {
  let statements = 0;
  const log = pino({ level: "debug" }, { write: (line: string) => void (line.includes('"msg":"query"') && statements++) });
  const db = openPostgres({ connectionString: bench.url, log, timeoutMs: 60_000 });
  let now = Date.UTC(2030, 0, 1, 10, 0, 0);
  const retention = parseRetention(DEFAULT_RETENTION);
  const needs = { db, clock: () => new Date(now), log, retention };
  const counter = new UsageCounter(() => now);
  const writer = new UsageWriter(needs, counter);
  try {
    // The partitions made ahead, as every process does at its start: the writes need no other statement.
    await usageUpkeep(needs, writer.known);
    const perWrite: number[] = [];
    const durations: number[] = [];
    const slice = Math.ceil(keys / 6);
    for (let m = 0; m < minutes; m++) {
      for (let s = 0; s < 6; s++) {
        for (let k = s * slice; k < Math.min(keys, (s + 1) * slice); k++) counter.count(1_000_000 + k, 0, 1);
        now += 10_000;
        const [before, startedAt] = [statements, performance.now()];
        await writer.write();
        durations.push(performance.now() - startedAt);
        perWrite.push(statements - before);
      }
    }
    const sizes = await sizesAfterVacuum(bench.url);
    const keyHours = (keys * minutes) / 60;
    const bytes = {
      minutes: Math.round(sizes.minutes / keyHours),
      hours: Math.round(sizes.hours / keys),
      days: Math.round(sizes.days / keys / 24),
      total: 0,
    };
    bytes.total = bytes.minutes + bytes.hours + bytes.days;
    const sorted = Float64Array.from(durations).sort();
    const gib = (b: number) => `${round(b / 2 ** 30, 1)} GiB`;
    // A million keys each used every minute: written a day, and held once each grain has filled its retention.
    const held = 1e6 * ((retention.minute / 3_600_000) * bytes.minutes + (retention.hour / 3_600_000) * bytes.hours + (retention.day / 3_600_000) * bytes.days);
    return {
      writes: perWrite.length,
      statementsPerWrite: Math.max(...perWrite),
      writeMs: { p50: round(percentile(sorted, 50), 1), max: round(sorted[sorted.length - 1] ?? NaN, 1) },
      bytesPerKeyHour: bytes,
      millionKeysADay: `a million keys each used every minute: ${gib(1e6 * 24 * bytes.total)} written a day (8,640 statements a process), ${gib(held)} held at the default retention (48 h of minutes, 90 d of hours, 730 d of days)`,
    };
  } finally {
    await db.close();
  }
}

/** The on-disk size of each grain's partitions of the run's year (2030), tables and indexes, once VACUUM FULL has left only live rows. */
async function sizesAfterVacuum(url: string): Promise<{ minutes: number; hours: number; days: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relname ~ '^usage_(minutes|hours|days)_p2030'");
    for (const { name } of rows) await client.query(`VACUUM FULL ${pg.escapeIdentifier(name)}`);
    const size = async (grain: string) =>
      Number((await client.query<{ n: string }>(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS n FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE $1", [`usage\\_${grain}\\_p2030%`],
      )).rows[0]!.n);
    return { minutes: await size("minutes"), hours: await size("hours"), days: await size("days") };
  } finally {
    await client.end();
  }
}
