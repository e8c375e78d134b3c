import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { tokenHashHex } from "../src/domain/keys/token.ts";
import { KeyCache } from "../src/services/verification/key-cache.ts";
import { openPostgres } from "../src/store/postgres.ts";
import { createBenchDatabase, DEFAULT_DATABASE_URL } from "./database.ts";
import { client } from "./http.ts";
import { startKeyplane } from "./processes.ts";

// `npm run bench:cache-cost`: what one entry of the verification cache costs on the heap, measured, not
// guessed (docs/scaling.md, "Memory"). Keys are provisioned through a keyplane of its own (domain keys
// on a domain with a policy, one in two with a policy of its own, as a gateway's keys are), then this
// process fills a KeyCache with them, and with as many never-seen tokens (negative entries), the heap
// read after a full collection before and after each. Run with --expose-gc (the npm script does).

export interface CacheCost {
  keys: number;
  /** Bytes per entry of a live key (its policy and the tenant and domain it embeds; its hash, the map's key). */
  keyEntryBytes: number;
  /** Of which outside the heap (the key's Buffers). */
  keyEntryExternalBytes: number;
  /** What the cache charges such an entry against its maxBytes (entryBytes), on average: at least the cost. */
  keyEntryChargedBytes: number;
  /** Bytes per entry of an unknown token (its hash, the map's key). */
  negativeEntryBytes: number;
}

/** The heap and the buffers outside it after a full collection. */
function usedAfterGc(): { heap: number; external: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --expose-gc");
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heap: heapUsed, external: arrayBuffers };
}

export async function cacheCost(keys: number, serverUrl = DEFAULT_DATABASE_URL): Promise<CacheCost> {
  const db = await createBenchDatabase(serverUrl);
  const dataDir = await mkdtemp(join(tmpdir(), "keyplane-cache-cost-"));
  const adminToken = "kpa_cost_" + randomBytes(24).toString("hex");
  const server = await startKeyplane("cache-cost", { databaseUrl: db.url, masterKey: randomBytes(32).toString("hex"), adminToken, dataDir });
  const admin = client(server.url, 16);
  const tokens: string[] = [];
  try {
    const must = async (answer: Promise<{ status: number; body: string }>) => {
      const a = await answer;
      if (a.status >= 300) throw new Error(`${a.status} ${a.body.slice(0, 200)}`);
      return a;
    };
    await must(admin.request("POST", "/admin/customers", { token: adminToken, body: { name: "cost" } }));
    await must(admin.request("POST", "/admin/customers/cost/domains", { token: adminToken, body: { domain: "sip.cost.example" } }));
    const manager = (await must(admin.request("POST", "/admin/customers/cost/keys", { token: adminToken, body: { name: "manager" } }))).body;
    const m = (JSON.parse(manager) as { keyId: string }).keyId;
    await must(admin.request("PUT", "/customers/cost/domains/sip.cost.example/policy", { token: m, body: { restrictions: { methods: ["GET", "POST"] } } }));
    for (let made = 0; made < keys; ) {
      const batch = Array.from({ length: Math.min(16, keys - made) }, () => made++);
      const answers = await Promise.all(batch.map((n) => must(admin.request("POST", "/customers/cost/domains/sip.cost.example/keys", {
        token: m, body: { name: `key-${n}`, ...(n % 2 === 0 && { policy: { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }] } }) },
      }))));
      for (const a of answers) tokens.push((JSON.parse(a.body) as { keyId: string }).keyId);
    }
  } finally {
    admin.close();
    await server.stop();
  }
  const store = openPostgres({ connectionString: db.url, log: pino({ level: "silent" }) });
  try {
    const cache = new KeyCache(store, { maxEntries: keys, maxBytes: Number.MAX_SAFE_INTEGER });
    const fill = async (hashes: string[]) => {
      for (let i = 0; i < hashes.length; i += 64) await Promise.all(hashes.slice(i, i + 64).map((h) => cache.lookup(h)));
    };
    // The hashes are made after each first reading, as a request makes them: the cache keeps them as its
    // keys, so they count (and so do the 8 bytes a slot of the array of them takes, a little too much).
    const empty = usedAfterGc();
    await fill(tokens.map(tokenHashHex));
    const withKeys = usedAfterGc();
    await fill(tokens.map(() => tokenHashHex(randomBytes(17).toString("hex"))));
    const withBoth = usedAfterGc();
    const charged = cache.bytes();
    if (cache.stats().size !== 2 * keys) throw new Error(`cache holds ${cache.stats().size} entries, not ${2 * keys}`);
    const per = (bytes: number) => Math.round(bytes / keys);
    return {
      keys,
      keyEntryBytes: per(withKeys.heap + withKeys.external - empty.heap - empty.external),
      keyEntryExternalBytes: per(withKeys.external - empty.external),
      keyEntryChargedBytes: per(charged),
      negativeEntryBytes: per(withBoth.heap + withBoth.external - withKeys.heap - withKeys.external),
    };
  } finally {
    await store.close();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { keys: { type: "string" } } });
  const result = await cacheCost(Number(values.keys ?? 5_000), process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}
