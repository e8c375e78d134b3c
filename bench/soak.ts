import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createBenchDatabase, DEFAULT_DATABASE_URL } from "./database.ts";
import { client, type Client } from "./http.ts";
import { memoryOf, REPO, sleep, startKeyplane } from "./processes.ts";

// `npm run bench:soak`: one `keyplane serve` (npm start's flags) under a sustained mix of every kind of
// request for ten minutes, its resident memory sampled every second. It must stay within 75% of the
// shipped deployment's memory limit (deploy/deployment.yaml) and be flat over the second half: the
// second half's largest sample at most FLAT_PERCENT above its first. bench/README.md, "Soak".

/** The share of the deployment's limit the peak may reach. */
const PEAK_SHARE = 0.75;
/** How far the second half's largest sample may rise above its first, in percent. */
const FLAT_PERCENT = 10;
/** Tokens kept for verification: distinct keys, so the key cache fills as a gateway's would. */
const KEPT_TOKENS = 20_000;
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
  requests: number;
  statuses: Record<string, number>;
  limitMiB: number;
  peakMiB: number;
  peakShare: number;
  /** The second half's first sample and its largest, MiB. */
  secondHalf: { firstMiB: number; maxMiB: number; risePercent: number };
  samplesMiB: number[];
  withinPeak: boolean;
  flat: boolean;
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const neverSeen = () => "XI" + randomBytes(16).toString("hex").toUpperCase();

export async function soak(seconds: number, say: (text: string) => void, serverUrl = DEFAULT_DATABASE_URL): Promise<SoakResult> {
  const db = await createBenchDatabase(serverUrl);
  const dataDir = await mkdtemp(join(tmpdir(), "keyplane-soak-"));
  const adminToken = "kpa_soak_" + randomBytes(24).toString("hex");
  const server = await startKeyplane("soak", { databaseUrl: db.url, masterKey: randomBytes(32).toString("hex"), adminToken, dataDir });
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
      (c) => c.request("PUT", "/customers/soak/domains/sip.soak.example/policy", { token: m, body: Math.random() < 0.5 ? null : { restrictions: { methods: ["GET", "POST"] } } }),
      async (c) => {
        const made = await c.request("POST", "/webhooks", { token: m, body: { url: "http://127.0.0.1:9/hook", events: ["key.deleted"] } });
        if (made.status !== 201) return made;
        await c.request("GET", "/webhooks", { token: m });
        const { id } = JSON.parse(made.body) as { id: number };
        return c.request("DELETE", `/webhooks/${id}`, { token: m });
      },
      (c) => c.request("DELETE", `/customers/soak/keys/${ids.shift() ?? NONE}`, { token: m }),
      (c) => c.request("GET", `/auth`, { token: pick(tokens) ?? m }),
    ];
    const weights = [3, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6];
    const deck = kinds.flatMap((kind, i) => Array<typeof kind>(weights[i]!).fill(kind));
    const samples: number[] = [];
    const end = performance.now() + seconds * 1000;
    let running = true;
    const sampler = (async () => {
      while (running) {
        const m = memoryOf(server.pid);
        if (m) samples.push(m.rss);
        await sleep(1_000);
      }
    })();
    say(`soak: ${seconds} s, ${CLIENTS} clients, every kind of request`);
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const c = client(server.url, 1);
        clients.push(c);
        for (let turn = i; performance.now() < end; turn++) {
          const answer = await deck[turn % deck.length]!(c).catch(() => ({ status: 0, body: "" }));
          count(answer.status);
        }
      }),
    );
    running = false;
    await sampler;
    const limit = deploymentMemoryLimit();
    const peak = Math.max(...samples);
    const half = samples.slice(Math.floor(samples.length / 2));
    const firstMiB = mib(half[0] ?? NaN);
    const maxMiB = mib(Math.max(...half));
    const risePercent = Math.round(((maxMiB - firstMiB) / firstMiB) * 1000) / 10;
    return {
      seconds, requests, statuses, limitMiB: mib(limit), peakMiB: mib(peak), peakShare: Math.round((peak / limit) * 1000) / 1000,
      secondHalf: { firstMiB, maxMiB, risePercent }, samplesMiB: samples.map(mib),
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
  const { values } = parseArgs({ options: { seconds: { type: "string" }, out: { type: "string" } } });
  const seconds = Number(values.seconds ?? 600);
  const say = (text: string) => process.stderr.write(`[soak] ${text}\n`);
  const result = await soak(seconds, say, process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const out = resolve(values.out ?? join(REPO, "bench/results/soak.json"));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ timestamp: new Date().toISOString(), ...result }, null, 2) + "\n");
  const { samplesMiB: _samples, ...shown } = result;
  process.stdout.write(JSON.stringify(shown, null, 2) + "\n");
  process.exitCode = result.withinPeak && result.flat ? 0 : 1;
}
