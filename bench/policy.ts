import type autocannon from "autocannon";
import { countDetail, countFigures, countTransactions, type BenchDatabase } from "./database.ts";
import type { Client } from "./http.ts";
import { expectStatus } from "./http.ts";
import { load } from "./load.ts";
import type { Server } from "./processes.ts";
import { each, inTurn, median, round, roundsDetail, type RoundsTools } from "./rounds.ts";

// The policy phase (bench/README.md): what key policy costs the gateway's hot path. GET /auth for a key
// whose customer has a rate limit of 1,000,000 a minute and 10^9 credits, against GET /auth for a key
// that no policy binds, in turn in rounds (bench/rounds.ts), on the same keyplane; and the database's
// transactions per admitted request of the first (leases, docs/adr/0013: a statement per lease, not
// per request).

export interface PolicyFigures {
  policyAuthVsPlain: number;
  policyAuthP99Ms: number;
  policyTransactionsPerRequest: number;
}

/** The customer's policy: a window that a minute of full load may fill (its 429s are counted apart), and credits that will not run out. */
export const BENCH_POLICY = { ratelimits: [{ name: "calls", limit: 1_000_000, windowSeconds: 60 }], credits: { remaining: 1_000_000_000 } };

export async function policyPhase(
  t: RoundsTools, a: Server, db: BenchDatabase, admin: Client, adminToken: string,
  plain: { customer: string; token: string }, bound: { customer: string; token: string },
): Promise<{ figures: PolicyFigures; details: Record<string, string>; transactions: ReturnType<typeof countFigures>; limited: number }> {
  await expectStatus(admin.request("PUT", `/admin/customers/${bound.customer}/policy`, { token: adminToken, body: BENCH_POLICY }), 200, "set the customer's policy");
  const auth = (f: { customer: string; token: string }): autocannon.Request[] => [
    { method: "GET", path: "/auth", headers: { authorization: `Bearer ${f.token}`, "x-original-method": "GET", "x-original-uri": `/customers/${f.customer}/invoices` } },
  ];
  const run = (requests: autocannon.Request[], duration: number) => load({ url: a.url, connections: t.connections, duration, requests });
  t.say(`policy: warm-up ${t.warmupSeconds} s each on /auth without and with a policy`);
  await run(auth(plain), t.warmupSeconds);
  await run(auth(bound), t.warmupSeconds);
  const seconds = t.seconds / 2;
  t.say(`policy: GET /auth without a policy and with a rate limit and credits in turn, ${t.rounds} rounds of ${seconds} s each, ${t.connections} connections`);
  // The runs without a policy ask the database nothing: the count covers them all.
  const counted = await countTransactions(db, t.settle, () =>
    inTurn(
      t.rounds,
      (i) => t.metered(`GET /auth without a policy ${i}`, [a], () => run(auth(plain), seconds)),
      (i) => t.metered(`GET /auth with a policy ${i}`, [a], () => run(auth(bound), seconds)),
    ),
  );
  const rounds = counted.result;
  for (const result of rounds.baselines) t.expectAnswers("policy: /auth without a policy", result, ["200"]);
  // A window of a minute that the load fills answers 429 until it ends: those are answers too.
  for (const result of rounds.subjects) t.expectAnswers("policy: /auth with a policy", result, ["200", "429"]);
  const admitted = rounds.subjects.reduce((n, r) => n + (r.statuses["200"] ?? 0), 0);
  const limited = rounds.subjects.reduce((n, r) => n + (r.statuses["429"] ?? 0), 0);
  return {
    figures: {
      policyAuthVsPlain: round(median(rounds.ratios)),
      policyAuthP99Ms: round(median(rounds.subjects.map((r) => r.latency.p99))),
      policyTransactionsPerRequest: round(counted.queries / admitted, 5),
    },
    details: {
      policyAuthVsPlain: roundsDetail(rounds),
      policyAuthP99Ms: `rounds ${each(rounds.subjects.map((r) => r.latency.p99))} ms; without a policy ${each(rounds.baselines.map((r) => r.latency.p99))} ms`,
      policyTransactionsPerRequest: `${round(counted.queries, 1)} over ${admitted} admitted requests${limited ? ` (and ${limited} answered 429: the minute's window full)` : ""} (${countDetail(counted)})`,
    },
    transactions: countFigures(counted),
    limited,
  };
}
