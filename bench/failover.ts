import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { PG_BIN } from "../test/support/pg-cluster.ts";
import { patroniUnavailable, PROBE_WRITE, startPatroni, type PatroniCluster, type PatroniNode } from "../test/support/patroni.ts";
import pg from "pg";
import { keyLogRead } from "../src/store/keys/key-catch-up.ts";
import { client, customerWithKey } from "./http.ts";
import { median } from "./rounds.ts";
import { REPO, sleep, startKeyplane, type Server } from "./processes.ts";

// `npm run bench:failover`: how long a Patroni failover keeps keyplane from writing, against how long it
// keeps any client from writing. On a cluster of its own (test/support/patroni.ts: etcd, three Patroni
// nodes, synchronous_mode, ttl 5 s), the leader is SIGKILLed (its Patroni and its postmaster), five times,
// the two promotable nodes taking turns. Measured from the kill: the first write answered 200 through
// keyplane (one `keyplane serve` with the three hosts in DATABASE_URL, provisioning back to back), and
// the first write through psql, each attempt a new psql with the three hosts and
// target_session_attrs=read-write (libpq's own failover). The target: keyplane within psql + 2 s.
// Writes bench/results/failover.json and prints a Markdown table (docs/high-availability.md).

const TARGET_MS = 2_000;
/** Between two psql attempts: about what a client that reconnects at once waits. */
const PSQL_GAP_MS = 20;
/** The load under which keyplane's sessions are counted before the failovers: enough to fill its pools. */
const LOAD_CLIENTS = 32;
const LOAD_MS = 3_000;
/** How often keyplane's sessions are counted on each node. */
const SAMPLE_MS = 50;
/** A failover that has not ended by then is a failure of the run. */
const WRITES_WITHIN_MS = 60_000;

const { values } = parseArgs({ args: process.argv.slice(2), options: { failovers: { type: "string", default: "5" }, out: { type: "string" } } });
const FAILOVERS = Number(values.failovers);
const OUT = resolve(values.out ?? join(REPO, "bench/results/failover.json"));

interface Failover {
  from: string;
  to: string;
  /** From the kill to the first write through psql, through keyplane, in ms. */
  psqlMs: number;
  keyplaneMs: number;
  /** The most sessions keyplane held on any one node at once, by application_name, from a second before the kill until it wrote again. */
  sessions: Record<string, number>;
}

/** Counts keyplane's sessions on every node that answers, every SAMPLE_MS until stopped: the most seen at once, by application_name. */
function sampleSessions(cluster: PatroniCluster): { stop(): Promise<Record<string, number>> } {
  const peak: Record<string, number> = {};
  let running = true;
  const loop = (async () => {
    while (running) {
      await Promise.all(
        cluster.nodes.map((node) =>
          cluster
            .admin<{ app: string; n: number }>("SELECT application_name AS app, count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'keyplane%' GROUP BY 1", [], node)
            .then((rows) => rows.forEach(({ app, n }) => (peak[app] = Math.max(peak[app] ?? 0, n))))
            .catch(() => undefined),
        ),
      );
      await sleep(SAMPLE_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/** Tries a write through a new psql until one is taken: when, from `since`. */
async function psqlWrites(cluster: PatroniCluster, since: number): Promise<number> {
  const hosts = cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(",");
  const url = `postgresql://postgres@${hosts}/postgres?target_session_attrs=read-write&connect_timeout=1`;
  for (;;) {
    const ok = await new Promise<boolean>((done) =>
      execFile(join(PG_BIN, "psql"), [url, "-Atqc", PROBE_WRITE], { timeout: 10_000 }, (error) => done(!error)),
    );
    if (ok) return performance.now() - since;
    if (performance.now() - since > WRITES_WITHIN_MS) throw new Error("psql never wrote");
    await sleep(PSQL_GAP_MS);
  }
}

/** POST /customers/self/keys as `root`, a new name each time: the answer, or undefined when none came. */
async function provision(p: Server, root: string, prefix: string, signal?: AbortSignal): Promise<Response | undefined> {
  const res = await fetch(`${p.url}/customers/self/keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${root}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `${prefix}-${randomBytes(6).toString("hex")}` }),
    signal,
  }).catch(() => undefined);
  await res?.arrayBuffer();
  return res;
}

/** Provisions keys through keyplane back to back until one sent after `since` is answered 200: when, from `since`. */
async function keyplaneWrites(p: Server, root: string, since: number): Promise<number> {
  for (;;) {
    const sentAt = performance.now();
    const res = await provision(p, root, "failover", AbortSignal.timeout(10_000));
    if (res?.status === 200 && sentAt >= since) return performance.now() - since;
    if (res && res.status !== 200 && res.status !== 503) throw new Error(`keyplane answered ${res.status} during a failover`);
    if (performance.now() - since > WRITES_WITHIN_MS) throw new Error("keyplane never wrote");
  }
}

/** Keyplane's sessions on the primary, at most, while LOAD_CLIENTS clients provision keys back to back for LOAD_MS. */
async function sessionsUnderLoad(cluster: PatroniCluster, p: Server, root: string): Promise<Record<string, number>> {
  const sampler = sampleSessions(cluster);
  const until = performance.now() + LOAD_MS;
  await Promise.all(
    Array.from({ length: LOAD_CLIENTS }, async () => {
      while (performance.now() < until) {
        const res = await provision(p, root, "load");
        if (!res) throw new Error("keyplane did not answer under load");
      }
    }),
  );
  return sampler.stop();
}

/**
 * What each process's listener costs the primary: the read it makes every 250 ms (key-catch-up.ts),
 * timed from here (the round trip, on one connection), as the listener sends it when nothing is new.
 */
async function listenerCheck(cluster: PatroniCluster, primary: PatroniNode): Promise<{ reads: number; meanMs: number; events: number }> {
  const READS = 2_000;
  const client = new pg.Client({ connectionString: primary.url() });
  await client.connect();
  try {
    // Prepared, as the listener's statements are (pg-listen.ts).
    const q = {
      query: async <R extends Record<string, unknown>>(text: string, params?: readonly unknown[]) => (await client.query<R>({ name: "check", text, values: params as unknown[] })).rows,
      exec: async () => undefined,
    };
    const { last } = await keyLogRead(q, null, [], 1);
    for (let i = 0; i < 100; i++) await keyLogRead(q, last, [], 10_001);
    const startedAt = performance.now();
    for (let i = 0; i < READS; i++) await keyLogRead(q, last, [], 10_001);
    return { reads: READS, meanMs: Number(((performance.now() - startedAt) / READS).toFixed(3)), events: last };
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const unavailable = patroniUnavailable();
  if (unavailable) throw new Error(`cannot run: ${unavailable}`);
  console.error("starting etcd and three Patroni nodes");
  const cluster = await startPatroni();
  const dataDir = await mkdtemp(join(tmpdir(), "keyplane-bench-failover-"));
  let keyplane: Server | undefined;
  try {
    const adminToken = "kpa_bench_" + randomBytes(24).toString("hex");
    keyplane = await startKeyplane("keyplane", { databaseUrl: cluster.url(), masterKey: randomBytes(32).toString("hex"), adminToken, dataDir });
    const admin = client(keyplane.url);
    const root = (await customerWithKey(admin, adminToken, "bench")).token;
    admin.close();

    const underLoad = await sessionsUnderLoad(cluster, keyplane, root);
    console.error(`keyplane's sessions on the primary under load: ${JSON.stringify(underLoad)}`);
    const results: Failover[] = [];
    const [node1, node2] = cluster.nodes;
    let [leader, standby]: PatroniNode[] = [node1, node2];
    for (let i = 0; i < FAILOVERS; i++) {
      if (i > 0) {
        await cluster.start(standby!);
        await cluster.settled(leader!.name, standby!.name);
      }
      const sampler = sampleSessions(cluster);
      await sleep(1_000);
      const killedAt = cluster.kill(leader!);
      const [psqlMs, keyplaneMs] = await Promise.all([psqlWrites(cluster, killedAt), keyplaneWrites(keyplane, root, killedAt)]);
      results.push({ from: leader!.name, to: standby!.name, psqlMs, keyplaneMs, sessions: await sampler.stop() });
      console.error(`failover ${i + 1}: ${leader!.name} -> ${standby!.name}: psql ${Math.round(psqlMs)} ms, keyplane ${Math.round(keyplaneMs)} ms; sessions ${JSON.stringify(results.at(-1)!.sessions)}`);
      [leader, standby] = [standby, leader];
    }
    const check = await listenerCheck(cluster, leader!);
    console.error(`the listener's check on the primary: ${check.meanMs.toFixed(3)} ms a read, over ${check.reads} reads of a log of ${check.events} events`);
    const behind = results.map((r) => r.keyplaneMs - r.psqlMs);
    const report = {
      date: new Date().toISOString(),
      failovers: results.map((r) => ({ ...r, psqlMs: Math.round(r.psqlMs), keyplaneMs: Math.round(r.keyplaneMs) })),
      medianPsqlMs: Math.round(median(results.map((r) => r.psqlMs))),
      medianKeyplaneMs: Math.round(median(results.map((r) => r.keyplaneMs))),
      maxBehindMs: Math.round(Math.max(...behind)),
      listenerCheck: check,
      sessionsUnderLoad: underLoad,
      peakSessions: Object.fromEntries(["keyplane", "keyplane-listen", "keyplane-probe"].map((app) => [app, Math.max(0, ...results.map((r) => r.sessions[app] ?? 0))])),
      targetBehindMs: TARGET_MS,
      met: behind.every((b) => b <= TARGET_MS),
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, JSON.stringify(report, null, 2) + "\n");
    console.log("| failover | psql writes after | keyplane writes after | keyplane behind psql |\n|---|---|---|---|");
    for (const [i, r] of results.entries()) console.log(`| ${i + 1}: ${r.from} → ${r.to} | ${Math.round(r.psqlMs)} ms | ${Math.round(r.keyplaneMs)} ms | ${Math.round(behind[i]!)} ms |`);
    console.log(`| median | ${report.medianPsqlMs} ms | ${report.medianKeyplaneMs} ms | target ≤ ${TARGET_MS} ms: ${report.met ? "met" : "MISSED"} |`);
    console.log(`\nkeyplane's sessions on the primary under load: ${JSON.stringify(underLoad)}; on one node at most, through the failovers: ${JSON.stringify(report.peakSessions)}`);
  } finally {
    await keyplane?.stop();
    await cluster.destroy();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
