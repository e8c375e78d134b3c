import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createBenchDatabase, DEFAULT_DATABASE_URL } from "./database.ts";
import { NEGATIVE_ENTRIES } from "../src/services/verification/key-cache.ts";
import { client, type Client } from "./http.ts";
import { freePort, memoryOf, REPO, sleep, startKeyplane } from "./processes.ts";

// `npm run bench:soak`: one `keyplane serve` (npm start's flags and environment) under a sustained mix of every kind of
// request for ten minutes, its resident memory sampled every second. It must stay within 65% of the
// shipped deployment's memory limit (deploy/deployment.yaml) and be flat over the second half: the
// second half's largest sample at most FLAT_PERCENT above its first. bench/README.md, "Soak".
// Before the ten minutes, every cache that grows with distinct keys, tokens or paths is filled past its
// cap (the fill), so that what is measured is the worst case, a replica whose caches are full, and not
// caches still filling; the mix then keeps them full, drawing on more keys than the key cache holds.
// Then the same mix runs WARM_UP_SECONDS unjudged (its samples count for the peak), so that the ten
// minutes measure a process whose V8 heaps are sized for the load: without it, the judged half rose
// 5.5-6.8% as V8 grew its pages, committed and pooled (the webhook thread's above all), some five to
// ten minutes in, while what each heap held after a full collection stayed level (docs/scaling.md,
// "Memory"). It was not the webhook retries: the mix's webhooks are deleted milliseconds after they
// are made, so no delivery of theirs is tried a third time (the 300 s wait).

/** The share of the deployment's limit the peak may reach. */
const PEAK_SHARE = 0.65;
/** How far the second half's largest sample may rise above its first, in percent. */
const FLAT_PERCENT = 5;
/** Tokens kept for verification: more distinct keys than the key cache holds, so it stays at its cap. */
const KEPT_TOKENS = 40_000;
/**
 * The fill: keys made and each verified once, more than the key cache holds (some 26,000 with npm
 * start's heap: docs/scaling.md, "Memory"); never-seen tokens, more than it remembers; distinct
 * platform paths, more than the path caches hold (10,000 answers).
 */
const FILL = { keys: KEPT_TOKENS, unknownTokens: NEGATIVE_ENTRIES + 10_000, paths: 12_000 };
/**
 * The mix, unjudged, between the fill and the timed minutes: long enough for V8 to have sized the heaps
 * for the load. In an 18-minute mix on the shared machine, RSS's minute means rose 21 MiB from the fifth
 * minute to the tenth, and 10 MiB over the eight after (docs/scaling.md, "Memory").
 */
const WARM_UP_SECONDS = 600;
const CLIENTS = 16;
/** A key id no key has: what a change asks for before any key of the soak's own exists (never the manager's). */
const NONE = 2_000_000_000;

/** The memory limit of the shipped Deployment, in bytes (its `limits: memory:`). */
export function deploymentMemoryLimit(): number {
  const yaml = readFileSync(join(REPO, "deploy/deployment.yaml"), "utf8");
  const match = /limits:\s*\n(?:\s+\w+:.*\n)*?\s+memory:\s*(\d+)(Mi|Gi)/.exec(yaml);
  if (!match) throw new Error("deploy/deployment.yaml: no memory limit found");
  return Number(match[1]) * (match[2] === "Gi" ? 2 ** 30 : 2 ** 20);
}

export interface SoakResult {
  seconds: number;
  /** Before the timed mix: what was sent to fill the caches, how long it took, and the key cache's entries (keys and unknown tokens) after it and at the end. */
  fill: { keys: number; unknownTokens: number; paths: number; seconds: number; samples: number };
  /** The unjudged mix after the fill (WARM_UP_SECONDS): its requests count among the soak's, its samples among samplesMiB (warmUp.samples of them, after the fill's). */
  warmUp: { seconds: number; requests: number; samples: number };
  /** keyplane's own reading after the fill, after the warm-up, and at the end. */
  memory: { afterFill: MemoryReading; afterWarmUp: MemoryReading; atEnd: MemoryReading };
  requests: number;
  statuses: Record<string, number>;
  limitMiB: number;
  peakMiB: number;
  peakShare: number;
  /** The timed mix's second half: its first sample and its largest, MiB. */
  secondHalf: { firstMiB: number; maxMiB: number; risePercent: number };
  /** The timed mix's halves, each part's mean over keyplane's readings (every READING_SECONDS), MiB: where a rise is. */
  halves: { first: MemoryParts; second: MemoryParts };
  /** keyplane's readings through the mix, every READING_SECONDS. */
  readings: MemoryReading[];
  /** Every sample, the fill's first, then the warm-up's: the peak is of them all. */
  samplesMiB: number[];
  withinPeak: boolean;
  flat: boolean;
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const neverSeen = () => "XI" + randomBytes(16).toString("hex").toUpperCase();

/**
 * Resident memory in parts: the serving thread's V8 heap (held, not only used), the webhook sender
 * thread's, buffers outside the heaps (Buffers, ArrayBuffers), and the rest (code, malloc's own).
 */
export interface MemoryParts { rssMiB: number; heapMiB: number; webhookHeapMiB: number; externalMiB: number; otherMiB: number }
/** How often keyplane's own readings are taken during the soak. */
const READING_SECONDS = 5;

function partsOf(r: MemoryReading): MemoryParts {
  return { rssMiB: r.rssMiB, heapMiB: r.heapTotalMiB, webhookHeapMiB: r.webhookHeapMiB, externalMiB: r.externalMiB, otherMiB: r.rssMiB - r.heapTotalMiB - r.webhookHeapMiB - r.externalMiB };
}

function meanParts(readings: MemoryReading[]): MemoryParts {
  const mean = (part: keyof MemoryParts) => mib((readings.reduce((sum, r) => sum + partsOf(r)[part], 0) / readings.length) * 2 ** 20);
  return { rssMiB: mean("rssMiB"), heapMiB: mean("heapMiB"), webhookHeapMiB: mean("webhookHeapMiB"), externalMiB: mean("externalMiB"), otherMiB: mean("otherMiB") };
}

/** Where the memory is, as keyplane's own metrics say (docs/operations.md, "Metrics"): MiB, but the key cache's entries. */
export interface MemoryReading { keyCacheEntries: number; rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; webhookHeapMiB: number; externalMiB: number }

async function memoryReading(metrics: Client): Promise<MemoryReading> {
  const text = (await metrics.request("GET", "/metrics")).body;
  const value = (name: string) => {
    const match = new RegExp(`^${name} ([0-9.e+]+)`, "m").exec(text);
    if (!match) throw new Error(`no ${name} in /metrics`);
    return Number(match[1]);
  };
  return {
    keyCacheEntries: value("keyplane_key_cache_entries"), rssMiB: mib(value("process_resident_memory_bytes")),
    heapUsedMiB: mib(value("nodejs_heap_size_used_bytes")), heapTotalMiB: mib(value("nodejs_heap_size_total_bytes")),
    webhookHeapMiB: mib(value("keyplane_webhook_thread_heap_bytes")),
    externalMiB: mib(value("nodejs_external_memory_bytes")),
  };
}

/**
 * Keys made are not announced, so keyplane's listener reads the key event log's record of them at the
 * next announced change; a read that finds more than 10,000 events empties the key cache and goes on
 * from the last event it read (docs/adr/0014-listener-catch-up.md), so 40,000 keys made empty it at
 * each of the next four changes. Those changes are made now, before the caches are filled: else the
 * mix's first changes empty the key cache and the mix fills it again (it did in every soak before).
 */
async function digestKeysMade(admin: Client, token: string, id: number, made: number): Promise<void> {
  for (let read = 0; read <= made / 10_000; read++) {
    // Disabled and enabled again: a PUT that changes nothing is not announced.
    for (const active of [false, true]) await admin.request("PUT", `/customers/soak/keys/${id}`, { token, body: { active } });
    await sleep(500);
  }
}

/**
 * `fillShare`: the share of FILL sent before the mix (1 for the worst case; the short form sends less);
 * `warmUpSeconds`: the unjudged mix between the fill and the timed `seconds`.
 */
export async function soak(seconds: number, say: (text: string) => void, serverUrl = DEFAULT_DATABASE_URL, fillShare = 1, warmUpSeconds = WARM_UP_SECONDS): Promise<SoakResult> {
  const db = await createBenchDatabase(serverUrl);
  const dataDir = await mkdtemp(join(tmpdir(), "keyplane-soak-"));
  const adminToken = "kpa_soak_" + randomBytes(24).toString("hex");
  const metricsPort = await freePort();
  const server = await startKeyplane("soak", { databaseUrl: db.url, masterKey: randomBytes(32).toString("hex"), adminToken, dataDir }, [],
    { KEYPLANE_METRICS_PORT: String(metricsPort) });
  const clients: Client[] = [];
  try {
    const admin = client(server.url, CLIENTS);
    clients.push(admin);
    const ok = async (what: string, answer: Promise<{ status: number; body: string }>, statuses: number[]) => {
      const a = await answer;
      if (!statuses.includes(a.status)) throw new Error(`${what}: ${a.status} ${a.body.slice(0, 200)}`);
      return a;
    };
    await ok("customer", admin.request("POST", "/admin/customers", { token: adminToken, body: { name: "soak" } }), [201]);
    await ok("domain", admin.request("POST", "/admin/customers/soak/domains", { token: adminToken, body: { domain: "sip.soak.example" } }), [201]);
    const manager = JSON.parse((await ok("manager", admin.request("POST", "/admin/customers/soak/keys", { token: adminToken, body: { name: "manager" } }), [200])).body) as { keyId: string };
    const tokens: string[] = [];
    const ids: number[] = [];
    let made = 0;
    const statuses: Record<string, number> = {};
    let requests = 0;
    const count = (status: number) => {
      requests++;
      statuses[status] = (statuses[status] ?? 0) + 1;
    };
    const pick = <T>(list: T[]): T | undefined => list[Math.floor(Math.random() * list.length)];
    const m = manager.keyId;
    const path = "/customers/soak/domains/sip.soak.example/calls";
    let paths = 0;
    /** A platform path no other request names: a domain that does not exist, each its own answer to keep. */
    const distinctPath = () => `/customers/soak/domains/d${paths++}.soak.example/calls`;
    // Each a kind of request, in turn; the verifications come most often, as in production.
    const kinds: ((c: Client) => Promise<{ status: number; body: string }>)[] = [
      async (c) => {
        const a = await c.request("POST", "/customers/soak/keys", { token: m, body: { name: `k${made++}`, ...(made % 5 === 0 && { policy: { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }] } }) } });
        if (a.status === 200) {
          const { keyId, id } = JSON.parse(a.body) as { keyId: string; id: number };
          tokens.push(keyId);
          ids.push(id);
          if (tokens.length > KEPT_TOKENS) tokens.splice(0, tokens.length - KEPT_TOKENS);
          if (ids.length > KEPT_TOKENS) ids.splice(0, ids.length - KEPT_TOKENS);
        }
        return a;
      },
      (c) => c.request("GET", "/keys/self", { token: pick(tokens) ?? m }),
      (c) => c.request("POST", "/verify", { body: { key: pick(tokens) ?? m, path, method: "GET" } }),
      (c) => c.request("POST", "/verify", { body: { key: neverSeen(), path, method: "GET" } }),
      (c) => c.request("GET", "/keys/self", { token: neverSeen() }),
      (c) => c.request("GET", "/customers/soak/keys?limit=100", { token: m }),
      (c) => c.request("GET", "/events?limit=50", { token: m }),
      (c) => c.request("GET", `/customers/soak/keys/${pick(ids) ?? NONE}/events`, { token: m }),
      (c) => c.request("PUT", `/customers/soak/keys/${pick(ids) ?? NONE}`, { token: m, body: { active: Math.random() < 0.8 } }),
      // A domain's policy is read, and keys' own policies set and removed. The domain's is set once, before
      // the fill: a change to an entity's policy empties the key cache of the process that makes it
      // (keys embed their entities), which, made here every few requests as it once was, kept the
      // cache from ever reaching its cap, the case this soak is for.
      (c) => c.request("GET", "/customers/soak/domains/sip.soak.example/policy", { token: m }),
      (c) => c.request("PUT", `/customers/soak/keys/${pick(ids) ?? NONE}`, { token: m, body: { policy: Math.random() < 0.5 ? null : { restrictions: { methods: ["GET", "POST"] } } } }),
      async (c) => {
        const made = await c.request("POST", "/webhooks", { token: m, body: { url: "http://127.0.0.1:9/hook", events: ["key.deleted"] } });
        if (made.status !== 201) return made;
        await c.request("GET", "/webhooks", { token: m });
        const { id } = JSON.parse(made.body) as { id: number };
        return c.request("DELETE", `/webhooks/${id}`, { token: m });
      },
      (c) => c.request("DELETE", `/customers/soak/keys/${ids.shift() ?? NONE}`, { token: m }),
      (c) => c.request("GET", `/auth`, { token: pick(tokens) ?? m }),
      (c) => c.request("POST", "/verify", { body: { key: pick(tokens) ?? m, path: distinctPath(), method: "GET" } }),
    ];
    const weights = [3, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 3];
    const deck = kinds.flatMap((kind, i) => Array<typeof kind>(weights[i]!).fill(kind));
    const samples: number[] = [];
    let running = true;
    const sampler = (async () => {
      while (running) {
        const m = memoryOf(server.pid);
        if (m) samples.push(m.rss);
        await sleep(1_000);
      }
    })();
    // The fill, CLIENTS requests at a time; its answers count among the soak's statuses.
    const spread = async (n: number, send: (c: Client, i: number) => Promise<{ status: number; body: string }>) => {
      let next = 0;
      await Promise.all(Array.from({ length: CLIENTS }, async () => {
        while (next < n) {
          const answer = await send(admin, next++).catch(() => ({ status: 0, body: "" }));
          count(answer.status);
        }
      }));
    };
    const fill = { keys: Math.round(FILL.keys * fillShare), unknownTokens: Math.round(FILL.unknownTokens * fillShare), paths: Math.round(FILL.paths * fillShare) };
    await ok("domain policy", admin.request("PUT", "/customers/soak/domains/sip.soak.example/policy", { token: m, body: { restrictions: { methods: ["GET", "POST"] } } }), [200]);
    const filling = performance.now();
    say(`fill: ${fill.keys} keys made and verified, ${fill.unknownTokens} never-seen tokens, ${fill.paths} distinct paths`);
    await spread(fill.keys, (c) => kinds[0]!(c));
    await digestKeysMade(admin, m, ids[0] ?? NONE, fill.keys);
    await spread(tokens.length, (c, i) => c.request("POST", "/verify", { body: { key: tokens[i]!, path, method: "GET" } }));
    await spread(fill.unknownTokens, (c) => c.request("POST", "/verify", { body: { key: neverSeen(), path, method: "GET" } }));
    await spread(fill.paths, (c) => c.request("POST", "/verify", { body: { key: pick(tokens) ?? m, path: distinctPath(), method: "GET" } }));
    const metrics = client(`http://127.0.0.1:${metricsPort}`, 1);
    clients.push(metrics);
    const filled = { ...fill, seconds: Math.round((performance.now() - filling) / 1000), samples: samples.length };
    const afterFill = await memoryReading(metrics);
    say(`fill: ${filled.seconds} s, then ${JSON.stringify(afterFill)}`);
    // The mix's clients, each sending every kind of request in turn, through the warm-up and the timed minutes.
    const mixers = Array.from({ length: CLIENTS }, (_, i) => ({ c: client(server.url, 1), turn: i }));
    clients.push(...mixers.map((mixer) => mixer.c));
    const mixFor = (mixSeconds: number) => {
      const end = performance.now() + mixSeconds * 1000;
      return Promise.all(mixers.map(async (mixer) => {
        while (performance.now() < end) {
          const answer = await deck[mixer.turn++ % deck.length]!(mixer.c).catch(() => ({ status: 0, body: "" }));
          count(answer.status);
        }
      }));
    };
    say(`warm-up: ${warmUpSeconds} s of the mix, unjudged`);
    const requestsBefore = requests;
    await mixFor(warmUpSeconds);
    const warmUp = { seconds: warmUpSeconds, requests: requests - requestsBefore, samples: samples.length - filled.samples };
    const afterWarmUp = await memoryReading(metrics);
    say(`warm-up: ${warmUp.requests} requests, then ${JSON.stringify(afterWarmUp)}`);
    const readings: MemoryReading[] = [];
    const reader = (async () => {
      while (running) {
        readings.push(await memoryReading(metrics));
        await sleep(READING_SECONDS * 1_000);
      }
    })();
    say(`soak: ${seconds} s, ${CLIENTS} clients, every kind of request`);
    await mixFor(seconds);
    running = false;
    await Promise.all([sampler, reader]);
    const atEnd = await memoryReading(metrics);
    const limit = deploymentMemoryLimit();
    const peak = Math.max(...samples);
    const mix = samples.slice(filled.samples + warmUp.samples);
    const half = mix.slice(Math.floor(mix.length / 2));
    const firstMiB = mib(half[0] ?? NaN);
    const maxMiB = mib(Math.max(...half));
    const risePercent = Math.round(((maxMiB - firstMiB) / firstMiB) * 1000) / 10;
    const middle = Math.floor(readings.length / 2);
    const halves = { first: meanParts(readings.slice(0, middle)), second: meanParts(readings.slice(middle)) };
    return {
      seconds, fill: filled, warmUp, memory: { afterFill, afterWarmUp, atEnd }, requests, statuses, limitMiB: mib(limit), peakMiB: mib(peak), peakShare: Math.round((peak / limit) * 1000) / 1000,
      secondHalf: { firstMiB, maxMiB, risePercent }, halves, readings, samplesMiB: samples.map(mib),
      withinPeak: peak <= PEAK_SHARE * limit, flat: risePercent <= FLAT_PERCENT,
    };
  } finally {
    for (const c of clients) c.close();
    await server.stop();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { seconds: { type: "string" }, "warm-up": { type: "string" }, out: { type: "string" } } });
  const seconds = Number(values.seconds ?? 600);
  const warmUpSeconds = Number(values["warm-up"] ?? WARM_UP_SECONDS);
  const say = (text: string) => process.stderr.write(`[soak] ${text}\n`);
  const result = await soak(seconds, say, process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 1, warmUpSeconds);
  const out = resolve(values.out ?? join(REPO, "bench/results/soak.json"));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ timestamp: new Date().toISOString(), ...result }, null, 2) + "\n");
  const { samplesMiB: _samples, readings: _readings, ...shown } = result;
  process.stdout.write(JSON.stringify(shown, null, 2) + "\n");
  process.exitCode = result.withinPeak && result.flat ? 0 : 1;
}
