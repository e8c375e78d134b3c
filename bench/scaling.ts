import type autocannon from "autocannon";
import type { BenchDatabase } from "./database.ts";
import { client, expectStatus } from "./http.ts";
import { load, percentile, type LoadResult } from "./load.ts";
import { startKeyplane, type KeyplaneEnv, type Server } from "./processes.ts";

// The scaling phase (bench/README.md, docs/scaling.md): 1, 2 and 4 keyplane processes on one
// PostgreSQL database. For each: GET /keys/self throughput over all of them at once (the load split
// evenly), provisioning throughput over all of them, the revocation delay across them (disable on the
// first, poll every other until it answers 401: the delay is the slowest), and the connections the
// database holds for them. Then the database's bytes per key. It runs only when asked (--only scaling).

export interface ScalingTools {
  connections: number;
  seconds: number;
  warmupSeconds: number;
  revocationTrials: number;
  say(text: string): void;
  expectAnswers(what: string, result: LoadResult, allowed: string[]): void;
}

export interface ScalingStep {
  processes: number;
  verificationsPerSecond: number;
  verificationsPerSecondPerProcess: number;
  provisioningKeysPerSecond: number;
  revocationP50Ms: number | null;
  revocationMaxMs: number | null;
  databaseConnections: number;
}

export interface ScalingResult {
  steps: ScalingStep[];
  keys: number;
  bytesPerKey: number;
  bytesPerKeyEvent: number;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

/** Loads every server at once, the connections split evenly; the total rate and the slowest run's seconds. */
async function together(t: ScalingTools, what: string, servers: Server[], requests: (i: number) => autocannon.Request[], amount?: number, seconds = t.seconds): Promise<{ perSecond: number; answered: number }> {
  const connections = Math.max(1, Math.floor(t.connections / servers.length));
  const results = await Promise.all(servers.map((s, i) => load({ url: s.url, connections, requests: requests(i), ...(amount ? { amount: Math.ceil(amount / servers.length) } : { duration: seconds }) })));
  results.forEach((r, i) => t.expectAnswers(`scaling: ${what} on ${servers[i]!.name}`, r, ["200"]));
  const answered = results.reduce((sum, r) => sum + (r.statuses["200"] ?? 0), 0);
  const slowest = Math.max(...results.map((r) => r.seconds));
  return { perSecond: answered / slowest, answered };
}

export async function scalingPhase(t: ScalingTools, first: Server, env: KeyplaneEnv, db: BenchDatabase, owner: { token: string }): Promise<ScalingResult> {
  const servers = [first];
  const steps: ScalingStep[] = [];
  let next = 0;
  try {
    for (const n of [1, 2, 4]) {
      while (servers.length < n) servers.push(await startKeyplane(`S${servers.length}`, env));
      t.say(`scaling: ${n} process${n > 1 ? "es" : ""}: GET /keys/self ${t.seconds} s, provisioning, ${t.revocationTrials} revocations`);
      const self: autocannon.Request[] = [{ method: "GET", path: "/keys/self", headers: { authorization: `Bearer ${owner.token}` } }];
      await together(t, "warm-up", servers, () => self, undefined, t.warmupSeconds);
      const verification = await together(t, "GET /keys/self", servers, () => self);
      const provision = (): autocannon.Request[] => [{
        method: "POST", path: "/keys", headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        setupRequest: (request) => ({ ...request, body: JSON.stringify({ name: `scale-${next++}` }) }),
      }];
      const provisioning = await together(t, "provisioning", servers, provision, 2_000 * (t.seconds >= 10 ? 5 : 1));
      const delays = n > 1 ? await revocations(t, servers, owner.token) : [];
      const sorted = Float64Array.from(delays).sort();
      steps.push({
        processes: n,
        verificationsPerSecond: Math.round(verification.perSecond),
        verificationsPerSecondPerProcess: Math.round(verification.perSecond / n),
        provisioningKeysPerSecond: Math.round(provisioning.perSecond),
        revocationP50Ms: delays.length ? round(percentile(sorted, 50), 2) : null,
        revocationMaxMs: delays.length ? round(sorted[sorted.length - 1]!, 2) : null,
        // Not counting the connection that asks.
        databaseConnections: (await db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db.name}'`)) - 1,
      });
    }
    const keys = await db.count("SELECT count(*) FROM api_keys");
    const events = await db.count("SELECT count(*) FROM key_events");
    return {
      steps,
      keys,
      bytesPerKey: Math.round((await db.count("SELECT pg_total_relation_size('api_keys') AS count")) / keys),
      bytesPerKeyEvent: Math.round((await db.count("SELECT pg_total_relation_size('key_events') AS count")) / events),
    };
  } finally {
    await Promise.all(servers.slice(1).map((s) => s.stop()));
  }
}

/** Disable a key on the first process; each trial's delay is until the last of the others answers 401. */
async function revocations(t: ScalingTools, servers: Server[], ownerToken: string): Promise<number[]> {
  const clients = servers.map((s) => client(s.url, 1));
  const [onFirst] = clients;
  try {
    const delays: number[] = [];
    for (let trial = 0; trial < t.revocationTrials; trial++) {
      const key = (await expectStatus(onFirst!.request("POST", "/keys", { token: ownerToken, body: { name: `scale-revoke-${servers.length}-${trial}` } }), 200, "provision")).json<{ id: number; keyId: string }>();
      for (const c of clients) await expectStatus(c.request("GET", "/keys/self", { token: key.keyId }), 200, "warm");
      await expectStatus(onFirst!.request("PUT", `/keys/${key.id}`, { token: ownerToken, body: { active: false } }), 200, "disable");
      const at = performance.now();
      const seen = await Promise.all(clients.slice(1).map(async (c) => {
        for (;;) {
          const answer = await c.request("GET", "/keys/self", { token: key.keyId });
          if (answer.status === 401) return performance.now() - at;
          if (answer.status !== 200 || performance.now() - at > 10_000) throw new Error(`revocation not seen: status ${answer.status}`);
        }
      }));
      delays.push(Math.max(...seen));
    }
    return delays;
  } finally {
    for (const c of clients) c.close();
  }
}
