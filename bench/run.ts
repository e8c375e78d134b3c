import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { get } from "node:http";
import { cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type autocannon from "autocannon";
import { analyticsPhase } from "./analytics.ts";
import { gatewayPhase } from "./gateway.ts";
import { each, inTurn, median, roundsDetail, type RoundsTools } from "./rounds.ts";
import { countDetail, countFigures, countTransactions, createBenchDatabase, DEFAULT_DATABASE_URL, type BenchDatabase } from "./database.ts";
import { client, customerWithKey, expectStatus, type Client, type Fixture } from "./http.ts";
import { load, percentile, summarize, type LoadResult } from "./load.ts";
import { metricsPhase } from "./metrics.ts";
import { lineagePhase } from "./lineage.ts";
import { policyPhase } from "./policy.ts";
import { webhooksPhase } from "./webhooks.ts";
import { idlePhase } from "./idle.ts";
import { importPhase } from "./import.ts";
import { scalingPhase } from "./scaling.ts";
import { cpuMeter, memoryOf, REPO, resetPeak, sleep, startBare, startKeyplane, type CpuUse, type KeyplaneEnv, type Metered, type Server } from "./processes.ts";
import { profileText, summarizeProfile, type ProfileSummary } from "./profile.ts";
import { FIGURES, figures, machine, markdownTable, versions, type FigureKey } from "./report.ts";

// `npm run bench`: keyplane on PostgreSQL, measured in one run against a bare node:http baseline.
// See bench/README.md for what each figure means and how it is measured.

const PHASES = ["self", "mixed", "provisioning", "revocation", "gateway", "metrics", "policy", "analytics", "webhooks", "idle", "scaling", "import"] as const;
/** Every phase but scaling, which starts four processes: it runs only when asked for. */
const DEFAULT_PHASES = PHASES.filter((p) => p !== "scaling");
type Phase = (typeof PHASES)[number];

interface Settings {
  mode: "full" | "short";
  databaseUrl: string;
  out: string;
  connections: number;
  /** Seconds per load figure (a ratio's rounds take half of them each), and of each warm-up before one. */
  seconds: number;
  /**
   * Rounds of each ratio's subject against its baseline (bench/rounds.ts): seven in the full run, since
   * on a shared host a round now and then runs a third slower with nothing changed in the process
   * (bench/README.md, "Slow rounds"), and the median must stand though two or three of them do.
   */
  rounds: number;
  warmupSeconds: number;
  listKeys: number;
  revocationTrials: number;
  unknownPool: number;
  phases: Set<Phase>;
  cpuProf: boolean;
}

function settings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      short: { type: "boolean", default: false },
      out: { type: "string" },
      only: { type: "string" },
      "cpu-prof": { type: "boolean", default: false },
      seconds: { type: "string" },
      "list-keys": { type: "string" },
      trials: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`usage: node bench/run.ts [--short] [--out FILE] [--only ${PHASES.join(",")}] [--cpu-prof]
                         [--seconds N] [--list-keys N] [--trials N]
env: DATABASE_URL (a PostgreSQL server; default ${DEFAULT_DATABASE_URL}), BENCH_SHORT=1 (as --short)\n`);
    process.exit(0);
  }
  const short = values.short || ["1", "true"].includes(process.env.BENCH_SHORT ?? "");
  const number = (value: string | undefined, fallback: number, name: string) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
    return n;
  };
  const only = values.only?.split(",").map((p) => p.trim());
  for (const p of only ?? []) if (!PHASES.includes(p as Phase)) throw new Error(`--only: unknown phase "${p}" (${PHASES.join(", ")})`);
  return {
    mode: short ? "short" : "full",
    databaseUrl: process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    out: resolve(values.out ?? join(REPO, "bench/results", short ? "short.json" : "latest.json")),
    connections: 64,
    seconds: number(values.seconds, short ? 2 : 10, "seconds"),
    rounds: short ? 3 : 7,
    warmupSeconds: short ? 0.5 : 3,
    listKeys: Math.round(number(values["list-keys"], short ? 2_000 : 100_000, "list-keys")),
    revocationTrials: Math.round(number(values.trials, short ? 20 : 100, "trials")),
    unknownPool: 1_000,
    phases: new Set((only ?? DEFAULT_PHASES) as Phase[]),
    cpuProf: values["cpu-prof"],
  };
}

const say = (text: string) => process.stderr.write(`[bench] ${text}\n`);

/** CPU used by each party during each measured run, by run. */
const cpu: Record<string, CpuUse> = {};
/** When each measured run ran, on the monotonic clock V8's CPU profiles use (microseconds), and on which servers. */
const windows: { name: string; servers: Metered[]; fromUs: number; toUs: number }[] = [];
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

async function metered<T>(name: string, servers: Metered[], db: BenchDatabase, run: () => Promise<T>): Promise<T> {
  const stop = cpuMeter(Object.fromEntries(servers.map((server) => [server.name, server.pid])), db.name);
  const fromUs = monotonicUs();
  const result = await run();
  windows.push({ name, servers, fromUs, toUs: monotonicUs() });
  cpu[name] = stop();
  return result;
}
const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/** A metered load run on one server, with the CPU microseconds that server spent per request. */
async function meteredOn(name: string, server: Metered, db: BenchDatabase, run: () => Promise<LoadResult>): Promise<{ result: LoadResult; usPerRequest: number }> {
  const result = await metered(name, [server], db, run);
  return { result, usPerRequest: round((1e6 * (cpu[name]?.servers[server.name] ?? NaN)) / result.requests, 1) };
}
const roundAll = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === "number" ? round(v, 3) : v])) as T;

/** Things that make a figure meaningless (wrong answers, errors): the run fails on them, unlike on a missed target. */
const problems: string[] = [];
function expectAnswers(what: string, result: LoadResult, allowed: string[]): void {
  const odd = Object.entries(result.statuses).filter(([status]) => !allowed.includes(status));
  if (odd.length || result.errors) {
    problems.push(`${what}: unexpected answers ${JSON.stringify(Object.fromEntries(odd))}, ${result.errors} errors (${result.timeouts} timeouts)`);
  }
}

function brief(result: LoadResult) {
  return {
    seconds: round(result.seconds),
    requests: result.requests,
    requestsPerSecond: round(result.requestsPerSecond, 0),
    statuses: result.statuses,
    errors: result.errors,
    latencyMs: { p50: round(result.latency.p50, 3), p90: round(result.latency.p90, 3), p99: round(result.latency.p99, 3), max: round(result.latency.max, 3) },
    latencyByStatusMs: Object.fromEntries(
      Object.entries(result.latencyByStatus).map(([s, l]) => [s, { count: l.count, p50: round(l.p50, 3), p99: round(l.p99, 3) }]),
    ),
    autocannon: result.autocannon,
  };
}

const unknownToken = () => "XI" + randomBytes(16).toString("hex").toUpperCase();

type Values = Partial<Record<FigureKey, number>>;
type Details = Partial<Record<FigureKey, string>>;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

// ---------------------------------------------------------------------------------------------
// GET /keys/self against the bare baseline, in rounds (bench/rounds.ts).

async function selfPhase(s: Settings, a: Server, db: BenchDatabase, fixture: Fixture, body: string, values: Values, details: Details, nodeArgs: string[]) {
  const requests: autocannon.Request[] = [{ method: "GET", path: "/keys/self", headers: { authorization: `Bearer ${fixture.token}` } }];
  const bare = await startBare(body, nodeArgs);
  try {
    say(`warm-up: ${s.warmupSeconds} s each on bare node:http and keyplane`);
    await load({ url: bare.url, connections: s.connections, duration: s.warmupSeconds, requests });
    await load({ url: a.url, connections: s.connections, duration: s.warmupSeconds, requests });
    const seconds = s.seconds / 2;
    say(`GET /keys/self and bare node:http in turn, ${s.rounds} rounds of ${seconds} s each, ${s.connections} connections`);
    // Each run with the CPU its server spent per request: less disturbed by other work on the machine than throughput is.
    const us = { keyplane: [] as number[], bare: [] as number[] };
    const measured = async (name: string, server: Server, side: keyof typeof us) => {
      const { result, usPerRequest } = await meteredOn(name, server, db, () => load({ url: server.url, connections: s.connections, duration: seconds, requests }));
      us[side].push(usPerRequest);
      return result;
    };
    const rounds = await inTurn(s.rounds, (i) => measured(`bare node:http ${i}`, bare, "bare"), (i) => measured(`GET /keys/self ${i}`, a, "keyplane"));
    for (const result of rounds.baselines) expectAnswers("bare", result, ["200"]);
    for (const result of rounds.subjects) expectAnswers("GET /keys/self", result, ["200"]);
    values.selfRequestsPerSecond = round(median(rounds.subjects.map((r) => r.requestsPerSecond)), 0);
    values.bareRequestsPerSecond = round(median(rounds.baselines.map((r) => r.requestsPerSecond)), 0);
    values.selfVsBare = round(median(rounds.ratios), 3);
    values.selfP50Ms = round(median(rounds.subjects.map((r) => r.latency.p50)), 3);
    values.selfP99Ms = round(median(rounds.subjects.map((r) => r.latency.p99)), 3);
    const cpuPerRequestUs = { keyplane: median(us.keyplane), bare: median(us.bare) };
    details.selfVsBare = `${roundsDetail(rounds)}; server CPU per request ${cpuPerRequestUs.keyplane} vs ${cpuPerRequestUs.bare} µs (medians)`;
    details.bareRequestsPerSecond = `median of ${s.rounds + 1} runs; p50 ${round(median(rounds.baselines.map((r) => r.latency.p50)))} ms, p99 ${round(median(rounds.baselines.map((r) => r.latency.p99)))} ms`;
    details.selfP99Ms = `rounds ${each(rounds.subjects.map((r) => r.latency.p99))} ms; bare node:http ${each(rounds.baselines.map((r) => r.latency.p99))} ms`;
    return { bodyBytes: Buffer.byteLength(body), bare: rounds.baselines.map(brief), self: rounds.subjects.map(brief), cpuPerRequestUs };
  } finally {
    await bare.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Half valid, half unknown tokens from a fixed pool, in rounds against all-valid runs; database
// queries counted by PostgreSQL.

async function mixedPhase(s: Settings, a: Server, db: BenchDatabase, fixture: Fixture, values: Values, details: Details) {
  const pool = Array.from({ length: s.unknownPool }, unknownToken);
  let next = 0;
  const valid: autocannon.Request = { method: "GET", path: "/keys/self", headers: { authorization: `Bearer ${fixture.token}` } };
  const requests: autocannon.Request[] = [
    valid,
    {
      method: "GET",
      path: "/keys/self",
      setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${pool[next++ % pool.length]}` } }),
    },
  ];
  say(`unknown tokens: warm-up pass over the pool of ${s.unknownPool} (each token at least twice)`);
  const before = await db.transactions();
  const warm = await load({ url: a.url, connections: s.connections, amount: 4 * s.unknownPool, requests });
  expectAnswers("unknown tokens, warm-up", warm, ["200", "401"]);
  say("waiting for PostgreSQL's statistics to settle (an idle backend flushes its counts within 10 s), then counting over the runs and over as long an idle interval");
  const seconds = s.seconds / 2;
  // The all-valid runs between the mixed ones ask the database nothing either: the count covers them all.
  const counted = await countTransactions(db, s.mode === "full", () => {
    say(`unknown tokens: 50% of requests, in turn with all-valid runs, ${s.rounds} rounds of ${seconds} s each, ${s.connections} connections`);
    return inTurn(
      s.rounds,
      (i) => metered(`all valid ${i}`, [a], db, () => load({ url: a.url, connections: s.connections, duration: seconds, requests: [valid] })),
      (i) => metered(`50% unknown tokens ${i}`, [a], db, () => load({ url: a.url, connections: s.connections, duration: seconds, requests })),
    );
  });
  const { result: rounds, queries } = counted;
  for (const result of rounds.baselines) expectAnswers("all valid", result, ["200"]);
  for (const result of rounds.subjects) expectAnswers("unknown tokens", result, ["200", "401"]);
  const unknown = rounds.subjects.reduce((n, r) => n + (r.statuses["401"] ?? 0), 0);
  values.mixedRequestsPerSecond = round(median(rounds.subjects.map((r) => r.requestsPerSecond)), 0);
  values.mixedVsValid = round(median(rounds.ratios), 3);
  values.mixedValidP99Ms = round(median(rounds.subjects.map((r) => r.latencyByStatus["200"]?.p99 ?? NaN)), 3);
  values.queriesPerUnknownToken = round(unknown > 0 ? queries / unknown : NaN, 6);
  details.mixedVsValid = `${roundsDetail(rounds)} all-valid`;
  details.queriesPerUnknownToken = `${round(queries, 1)} queries for ${fmt(unknown)} unknown-token requests (${countDetail(counted)}); warm-up: ${counted.from - before} for ${s.unknownPool} new tokens`;
  return {
    poolSize: s.unknownPool,
    warmup: { ...brief(warm), transactions: counted.from - before },
    allValid: rounds.baselines.map(brief),
    measured: rounds.subjects.map(brief),
    transactions: countFigures(counted),
    queries: round(queries, 2),
  };
}

// ---------------------------------------------------------------------------------------------
// Provisioning N keys into one customer, then GET of that whole list.

async function provisioningPhase(s: Settings, a: Server, db: BenchDatabase, admin: Client, adminToken: string, values: Values, details: Details) {
  const owner = await customerWithKey(admin, adminToken, "bench-list");
  const wanted = s.listKeys - 1; // the owner's key is in the list too
  let next = 0;
  const requests: autocannon.Request[] = [
    {
      method: "POST",
      path: "/keys",
      headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
      setupRequest: (request) => ({ ...request, body: JSON.stringify({ name: `bench-key-${next++}` }) }),
    },
  ];
  say(`provisioning: ${fmt(wanted)} POST /keys of new keys, ${s.connections} connections`);
  const transactionsBefore = await db.transactions();
  const provisioned = await metered("provisioning", [a], db, () => load({ url: a.url, connections: s.connections, amount: wanted, requests }));
  expectAnswers("provisioning", provisioned, ["200"]);
  const created = provisioned.statuses["200"] ?? 0;
  for (let i = created; i < wanted; i++) {
    // only after failures, which expectAnswers has recorded: the list must still hold N keys
    await expectStatus(admin.request("POST", "/keys", { token: owner.token, body: { name: `bench-key-more-${i}` } }), 200, "provision");
  }
  // The full run waits for PostgreSQL's statistics to settle; the short one reads them at once (approximate).
  const transactions = (s.mode === "full" ? await db.settledTransactions() : await db.transactions()) - transactionsBefore;
  // Every key is written with its `created` event, in the same statement.
  const events = await db.count("SELECT count(*) FROM key_events e JOIN customers c ON c.id = e.tenant_id WHERE c.name = 'bench-list' AND e.action = 'created'");
  if (events !== wanted + 1) problems.push(`provisioning: ${events} created events for ${wanted + 1} keys`);
  values.provisioningKeysPerSecond = round(created / provisioned.seconds, 0);
  // CPU per key is less disturbed by other work on the machine than keys per second is.
  const use = cpu.provisioning!;
  const cpuPerKeyUs = (party: string) => round((1e6 * (party === "postgres" ? use.postgres : use.servers[party]!)) / created, 0);
  details.provisioningKeysPerSecond = `${fmt(created)} keys in ${round(provisioned.seconds, 1)} s, p50 ${round(provisioned.latency.p50)} ms, p99 ${round(provisioned.latency.p99)} ms${s.mode === "full" ? `, ${round(transactions / created, 2)} DB transactions per key` : ""}, CPU per key: keyplane ${cpuPerKeyUs(a.name)} µs, PostgreSQL ${cpuPerKeyUs("postgres")} µs`;

  await sleep(1_000);
  say(`GET /keys: the whole list of ${fmt(s.listKeys)} keys, streamed`);
  const list = await metered("list", [a], db, () => measureList(a, owner.token));
  if (list.keys !== s.listKeys) problems.push(`list: expected ${s.listKeys} keys, got ${list.keys}`);
  if (!list.ordered) problems.push("list: ids are not strictly increasing");
  values.listSeconds = round(list.seconds, 3);
  values.listRssGrowthMiB = round(list.rssGrowthMiB, 1);
  details.listSeconds = `${fmt(list.keys)} keys, ${round(list.bytes / 2 ** 20, 1)} MiB, first byte at ${round(list.firstByteSeconds * 1000, 0)} ms`;
  details.listRssGrowthMiB = `${round(list.rssBeforeMiB, 0)} → ${round(list.rssPeakMiB, 0)} MiB, peak from ${list.peakFrom}`;
  return { provisioning: { ...brief(provisioned), transactions, transactionsPerKey: round(transactions / created, 2) }, list };
}

/** One GET of the whole list: time to last byte, and the server's RSS sampled every 20 ms meanwhile. */
async function measureList(a: Server, token: string) {
  const hwmReset = resetPeak(a.pid);
  const before = memoryOf(a.pid)?.rss ?? NaN;
  let sampled = before;
  const sampler = setInterval(() => {
    const now = memoryOf(a.pid);
    if (now && now.rss > sampled) sampled = now.rss;
  }, 20);
  const startedAt = performance.now();
  let firstByteAt = NaN;
  const chunks: Buffer[] = [];
  const status = await new Promise<number>((resolve, reject) => {
    get(`${a.url}/keys`, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      firstByteAt = performance.now();
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    }).on("error", reject);
  });
  const seconds = (performance.now() - startedAt) / 1000;
  clearInterval(sampler);
  const after = memoryOf(a.pid);
  const peak = Math.max(sampled, hwmReset && after ? after.hwm : 0);
  const body = Buffer.concat(chunks);
  let keys = 0;
  let ordered = true;
  if (status !== 200) problems.push(`list: status ${status}: ${body.subarray(0, 300).toString()}`);
  else {
    const list = JSON.parse(body.toString("utf8")) as { id: number }[];
    keys = list.length;
    for (let i = 1; i < list.length; i++) if (!(list[i]!.id > list[i - 1]!.id)) ordered = false;
  }
  const mib = (bytes: number) => bytes / 2 ** 20;
  return {
    keys,
    ordered,
    bytes: body.length,
    seconds,
    firstByteSeconds: (firstByteAt - startedAt) / 1000,
    rssBeforeMiB: round(mib(before), 1),
    rssPeakMiB: round(mib(peak), 1),
    rssGrowthMiB: mib(peak - before),
    peakFrom: hwmReset ? "VmHWM (reset before the request) and 20 ms samples" : "20 ms samples of VmRSS",
  };
}

// ---------------------------------------------------------------------------------------------
// Revocation: disable a key on A; A must refuse it at once, B as soon as it hears of it.

async function revocationPhase(s: Settings, a: Server, b: Server, adminToken: string, values: Values, details: Details) {
  const onA = client(a.url, 2);
  const onB = client(b.url, 1);
  try {
    const owner = await customerWithKey(onA, adminToken, "bench-revocation");
    const delays: number[] = [];
    let stale = 0;
    let timedOut = 0;
    let polls = 0;
    const limitMs = 10_000;
    say(`revocation: ${s.revocationTrials} trials (provision on A, warm A and B, disable on A, check A, poll B)`);
    for (let trial = 0; trial < s.revocationTrials; trial++) {
      const key = (await expectStatus(onA.request("POST", "/keys", { token: owner.token, body: { name: `revoke-${trial}` } }), 200, "provision")).json<{ id: number; keyId: string }>();
      await expectStatus(onA.request("GET", "/keys/self", { token: key.keyId }), 200, "warm A");
      await expectStatus(onB.request("GET", "/keys/self", { token: key.keyId }), 200, "warm B");
      await expectStatus(onA.request("PUT", `/keys/${key.id}`, { token: owner.token, body: { active: false } }), 200, "disable");
      const disabledAt = performance.now();
      const sameProcess = onA.request("GET", "/keys/self", { token: key.keyId });
      const otherProcess = (async () => {
        for (;;) {
          polls++;
          const answer = await onB.request("GET", "/keys/self", { token: key.keyId });
          const elapsed = performance.now() - disabledAt;
          if (answer.status === 401) return elapsed;
          if (answer.status !== 200) throw new Error(`poll B: status ${answer.status}`);
          if (elapsed > limitMs) {
            timedOut++;
            return limitMs;
          }
        }
      })();
      if ((await sameProcess).status !== 401) stale++;
      delays.push(await otherProcess);
    }
    const sorted = Float64Array.from(delays).sort();
    values.revocationStaleSameProcess = stale;
    values.revocationP50Ms = round(percentile(sorted, 50), 3);
    values.revocationP99Ms = round(percentile(sorted, 99), 3);
    values.revocationMaxMs = round(sorted[sorted.length - 1] ?? NaN, 3);
    details.revocationStaleSameProcess = `${stale} of ${s.revocationTrials} trials`;
    details.revocationP99Ms = `${s.revocationTrials} trials${timedOut ? `, ${timedOut} not revoked within ${limitMs / 1000} s` : ""}`;
    if (timedOut) problems.push(`revocation: ${timedOut} trials still answered 200 on B after ${limitMs} ms`);
    return { trials: s.revocationTrials, stale, timedOut, pollsPerTrial: round(polls / s.revocationTrials, 1), delayMs: { ...roundAll(summarize(delays)), all: delays.map((d) => round(d, 3)) } };
  } finally {
    onA.close();
    onB.close();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const s = settings(process.argv.slice(2));
  const startedAt = new Date();
  const clock = performance.now();
  const machineAtStart = machine();
  const cleanups: (() => Promise<unknown>)[] = [];
  const children: Server[] = [];
  let interrupted = false;
  const interrupt = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    say(`${signal}: stopping`);
    void cleanUp().finally(() => process.exit(130));
  };
  const cleanUp = async () => {
    while (cleanups.length) await cleanups.pop()!().catch((error: unknown) => say(`clean-up: ${String(error)}`));
  };
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);

  say(`mode ${s.mode}; keyplane runs with LOG_LEVEL=warn (per-request info logging off); load by autocannon in this process`);
  const values: Values = {};
  const details: Details = {};
  const runs: Record<string, unknown> = {};
  let profiles: { run: string; file: string; summary: ProfileSummary }[] | undefined;
  let db: BenchDatabase | undefined;
  try {
    db = await createBenchDatabase(s.databaseUrl);
    const database = db;
    cleanups.push(() => database.drop());
    say(`PostgreSQL ${db.serverVersion}, database ${db.name}`);
    const dataDir = await mkdtemp(join(tmpdir(), "keyplane-bench-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env: KeyplaneEnv = {
      databaseUrl: db.url,
      masterKey: randomBytes(32).toString("hex"),
      adminToken: "kpa_bench_" + randomBytes(24).toString("hex"),
      dataDir,
    };
    const profileDir = s.cpuProf ? await mkdtemp(join(tmpdir(), "keyplane-bench-profile-")) : undefined;
    const profiling = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
    const a = await startKeyplane("A", env, profiling);
    children.push(a);
    cleanups.push(() => a.stop());
    const admin = client(a.url);
    cleanups.push(async () => admin.close());

    const fixture = await customerWithKey(admin, env.adminToken, "bench");
    const selfBody = (await expectStatus(admin.request("GET", "/keys/self", { token: fixture.token }), 200, "GET /keys/self")).body;

    if (s.phases.has("self")) runs.self = await selfPhase(s, a, db, fixture, selfBody, values, details, profiling);
    if (s.phases.has("mixed")) runs.unknownTokens = await mixedPhase(s, a, db, fixture, values, details);
    if (s.phases.has("provisioning")) runs.provisioningAndList = await provisioningPhase(s, a, db, admin, env.adminToken, values, details);
    if (s.phases.has("revocation")) {
      const b = await startKeyplane("B", env);
      children.push(b);
      cleanups.push(() => b.stop());
      runs.revocation = await revocationPhase(s, a, b, env.adminToken, values, details);
      // The later phases measure one keyplane: B's sender, idle, would send A's messages on the same cores.
      await b.stop();
    }
    const tools: RoundsTools = {
      ...s, settle: s.mode === "full", say, expectAnswers, problem: (text) => problems.push(text),
      metered: (name, servers, run) => metered(name, servers, database, run),
    };
    if (s.phases.has("gateway")) {
      const gateway = await gatewayPhase(tools, a, db, fixture);
      Object.assign(values, gateway.figures);
      Object.assign(details, gateway.details);
      runs.gateway = gateway;
    }
    if (s.phases.has("metrics")) {
      const metrics = await metricsPhase({ ...s, say, expectAnswers, metered: (name, server, run) => meteredOn(name, server, database, run) }, a, env, fixture);
      Object.assign(values, metrics.figures);
      Object.assign(details, metrics.details);
      runs.metrics = metrics;
    }
    if (s.phases.has("policy")) {
      const bound = await customerWithKey(admin, env.adminToken, "bench-policy");
      const policy = await policyPhase(tools, a, db, admin, env.adminToken, fixture, bound);
      Object.assign(values, policy.figures);
      Object.assign(details, policy.details);
      runs.policy = policy;
      const lineage = await lineagePhase(tools, a, admin, env.adminToken, fixture, "bench-lineage");
      Object.assign(values, lineage.figures);
      Object.assign(details, lineage.details);
    }
    if (s.phases.has("analytics")) {
      const tools = { ...s, say, expectAnswers, metered: (name: string, server: Metered, run: () => Promise<LoadResult>) => meteredOn(name, server, database, run) };
      const analytics = await analyticsPhase(tools, env, db, fixture, s.mode === "full" ? 100_000 : 10_000, s.mode === "full" ? 6 : 2);
      Object.assign(values, analytics.figures);
      Object.assign(details, analytics.details);
      runs.analytics = analytics.writer;
    }
    if (s.phases.has("webhooks")) {
      const owner = await customerWithKey(admin, env.adminToken, "bench-webhooks");
      const webhooks = await webhooksPhase(tools, a, db, admin, owner);
      Object.assign(values, webhooks.figures);
      Object.assign(details, webhooks.details);
      runs.webhooks = webhooks;
    }
    if (s.phases.has("idle")) {
      // A database and a keyplane of its own, so that A's background work is not counted.
      const idle = await idlePhase({ settle: s.mode === "full", say }, s.databaseUrl, env, s.mode === "full" ? 60 : 3);
      values.idleTransactionsPerSecond = round(idle.transactionsPerSecond, 3);
      details.idleTransactionsPerSecond = idle.detail;
      runs.idle = idle;
    }
    if (s.phases.has("scaling")) {
      const owner = await customerWithKey(admin, env.adminToken, "bench-scaling");
      const scaling = await scalingPhase({ ...s, say, expectAnswers }, a, env, db, owner);
      runs.scaling = scaling;
      say(`scaling: ${JSON.stringify(scaling)}`);
    }
    if (s.phases.has("import")) {
      const keys = Number(process.env.BENCH_IMPORT_KEYS ?? (s.mode === "full" ? 1_000_000 : 20_000));
      const imported = await importPhase({ say, problem: (text) => problems.push(text), keys, seconds: s.seconds }, a, env.adminToken, fixture, async () => {
        const peer = await startKeyplane("import-peer", env);
        children.push(peer);
        return peer;
      });
      Object.assign(values, imported.figures);
      Object.assign(details, imported.details);
      runs.import = imported.run;
    }
    if (profileDir) {
      await a.stop();
      profiles = profilesByRun(profileDir);
    }
  } catch (error) {
    problems.push(`run failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    for (const child of children) process.stderr.write(child.output().slice(-4_000) + "\n");
  } finally {
    await cleanUp();
  }

  const all = figures(Object.fromEntries(FIGURES.map(({ key }) => [key, values[key] ?? NaN])) as Record<FigureKey, number>, details);
  const result = {
    schema: 1,
    mode: s.mode,
    timestamp: startedAt.toISOString(),
    durationSeconds: round((performance.now() - clock) / 1000, 1),
    settings: {
      connections: s.connections,
      secondsPerLoadFigure: s.seconds,
      warmupSeconds: s.warmupSeconds,
      listKeys: s.listKeys,
      revocationTrials: s.revocationTrials,
      unknownTokenPool: s.unknownPool,
      phases: [...s.phases],
      keyplaneLogLevel: "warn",
      loadGenerator: "autocannon, in the benchmark's process (one thread), on the same machine",
    },
    targetsApply: s.mode === "full" && DEFAULT_PHASES.every((p) => s.phases.has(p)),
    machine: { ...machineAtStart, loadAverageAtEnd: machine().loadAverage },
    versions: versions(db?.serverVersion ?? "unknown"),
    figures: all,
    runs,
    cpuSeconds: cpu,
    ...(profiles ? { profiles } : {}),
    problems,
  };
  mkdirSync(dirname(s.out), { recursive: true });
  // Every response's latency (LoadResult.latencies) stays out: the summaries beside them are the record.
  const replacer = (_k: string, v: unknown) => (ArrayBuffer.isView(v) ? undefined : typeof v === "number" && !Number.isFinite(v) ? null : v);
  writeFileSync(s.out, JSON.stringify(result, replacer, 2) + "\n");

  const v = result.versions;
  process.stdout.write(
    [
      `## keyplane benchmark (${s.mode}${s.mode === "short" ? ": figures not comparable with the targets" : ""})`,
      "",
      `${result.machine.cpuCount} × ${result.machine.cpuModel}, ${result.machine.totalMemoryGiB} GiB; Node ${v.node}, PostgreSQL ${v.postgres}, keyplane ${v.keyplane}${v.commit ? ` (${v.commit}${v.uncommittedChanges ? ", with uncommitted changes" : ""})` : ""}; ${result.timestamp}.`,
      `keyplane ran with LOG_LEVEL=warn (per-request info logging off); ${s.connections} connections; ${s.seconds} s per load figure; ${fmt(s.listKeys)}-key list; ${s.revocationTrials} revocation trials.`,
      "",
      markdownTable(all),
      "",
      cpuTable(),
      "",
      problems.length ? `**problems:**\n${problems.map((p) => `- ${p}`).join("\n")}\n` : "",
      `written to ${s.out} in ${result.durationSeconds} s`,
      "",
    ].join("\n"),
  );
  return problems.length ? 1 : 0;
}

/** Who used the cores during each measured run: on a shared machine, "others" is the disturbance. */
function cpuTable(): string {
  const rows = Object.entries(cpu).map(([name, c]) => {
    const servers = Object.entries(c.servers).map(([server, sec]) => `${server === "bare" || server.startsWith("nginx") ? server : "keyplane " + server} ${sec}`).join(", ");
    return `| ${name} | ${c.seconds} | ${servers} | ${c.postgres} | ${c.loadGenerator} | ${c.others} | ${Math.round(c.machineBusy * 100)}% |`;
  });
  if (!rows.length) return "";
  const cores = cpus().length;
  const disturbed = Object.entries(cpu).filter(([, c]) => c.others > 0.1 * cores * c.seconds).map(([name]) => name);
  return [
    "CPU seconds used during each measured run (2 cores = 2 CPU-s per second):",
    "",
    "| run | wall s | server | PostgreSQL (bench db) | load generator | other processes | machine busy |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    ...(disturbed.length
      ? ["", `Other processes used more than 10% of the machine during: ${disturbed.join("; ")}. Those figures were disturbed; run again on a quiet machine to compare.`]
      : []),
  ].join("\n");
}

/** With --cpu-prof: each measured run's part of its server's profile (a profile's file name holds the pid). */
function profilesByRun(dir: string): { run: string; file: string; summary: ProfileSummary }[] {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  const out: { run: string; file: string; summary: ProfileSummary }[] = [];
  for (const { name, servers, fromUs, toUs } of windows) {
    const server = servers[0]!;
    const file = files.find((f) => f.split(".")[3] === String(server.pid));
    if (!file) {
      problems.push(`--cpu-prof: no profile from ${server.name} (pid ${server.pid})`);
      continue;
    }
    const summary = summarizeProfile(join(dir, file), 15, { fromUs, toUs });
    out.push({ run: name, file: join(dir, file), summary });
    process.stderr.write(`\n### ${name}: ${server.name === "bare" ? "bare node:http" : `keyplane ${server.name}`}\n${profileText(summary)}\n`);
  }
  process.stderr.write(`\n(profiles in ${dir})\n`);
  return out;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
