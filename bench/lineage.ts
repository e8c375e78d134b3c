import type autocannon from "autocannon";
import type { Client } from "./http.ts";
import { expectStatus } from "./http.ts";
import { load } from "./load.ts";
import type { Server } from "./processes.ts";
import { inTurn, median, round, roundsDetail, type RoundsTools } from "./rounds.ts";

// Part of the policy phase (bench/README.md): what a key's lineage costs the gateway's hot path
// (docs/api.md, "Restricted keys"). GET /auth for a key three generations deep whose two ancestors each
// have a policy of their own (restrictions the requests pass: the chain is resolved and judged on every
// request, nothing is counted), against GET /auth for a key that no policy binds, in turn in rounds.

export interface LineageFigures {
  lineageAuthVsPlain: number;
}

/** The ancestors' policies: each binds, neither refuses the bench's requests. */
export const LINEAGE_POLICIES = [{ restrictions: { methods: ["GET", "POST"] } }, { restrictions: { methods: ["GET", "POST", "PUT", "DELETE"] } }];

/** Makes customer `customer`'s key three generations deep: the admin's key with a policy, its child with one, their grandchild. */
async function deepKey(admin: Client, adminToken: string, customer: string): Promise<string> {
  await expectStatus(admin.request("POST", "/admin/customers", { token: adminToken, body: { name: customer } }), 201, "create customer");
  const first = await expectStatus(
    admin.request("POST", `/admin/customers/${customer}/keys`, { token: adminToken, body: { name: "ancestor", policy: LINEAGE_POLICIES[0] } }), 200, "provision the ancestor",
  );
  const child = await expectStatus(
    admin.request("POST", "/keys", { token: first.json<{ keyId: string }>().keyId, body: { name: "parent", policy: LINEAGE_POLICIES[1] } }), 200, "provision the parent",
  );
  const grandchild = await expectStatus(admin.request("POST", "/keys", { token: child.json<{ keyId: string }>().keyId, body: { name: "grandchild" } }), 200, "provision the grandchild");
  return grandchild.json<{ keyId: string }>().keyId;
}

export async function lineagePhase(
  t: RoundsTools, a: Server, admin: Client, adminToken: string, plain: { customer: string; token: string }, customer: string,
): Promise<{ figures: LineageFigures; details: Record<string, string> }> {
  const deep = { customer, token: await deepKey(admin, adminToken, customer) };
  const auth = (f: { customer: string; token: string }): autocannon.Request[] => [
    { method: "GET", path: "/auth", headers: { authorization: `Bearer ${f.token}`, "x-original-method": "GET", "x-original-uri": `/customers/${f.customer}/invoices` } },
  ];
  const run = (requests: autocannon.Request[], duration: number) => load({ url: a.url, connections: t.connections, duration, requests });
  t.say(`lineage: warm-up ${t.warmupSeconds} s on /auth for a key three generations deep`);
  await run(auth(deep), t.warmupSeconds);
  const seconds = t.seconds / 2;
  t.say(`lineage: GET /auth without a policy and three generations deep in turn, ${t.rounds} rounds of ${seconds} s each, ${t.connections} connections`);
  const rounds = await inTurn(
    t.rounds,
    (i) => t.metered(`GET /auth without a policy (lineage) ${i}`, [a], () => run(auth(plain), seconds)),
    (i) => t.metered(`GET /auth three generations deep ${i}`, [a], () => run(auth(deep), seconds)),
  );
  for (const result of rounds.baselines) t.expectAnswers("lineage: /auth without a policy", result, ["200"]);
  for (const result of rounds.subjects) t.expectAnswers("lineage: /auth three generations deep", result, ["200"]);
  return {
    figures: { lineageAuthVsPlain: round(median(rounds.ratios)) },
    details: { lineageAuthVsPlain: roundsDetail(rounds) },
  };
}
