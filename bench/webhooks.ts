import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type autocannon from "autocannon";
import type { BenchDatabase } from "./database.ts";
import type { Client } from "./http.ts";
import { expectStatus } from "./http.ts";
import { load, type LoadResult } from "./load.ts";
import { cpuMeter, type Metered, type Server } from "./processes.ts";
import { inTurn, median, round, roundsDetail } from "./rounds.ts";

// The webhooks phase (bench/README.md): how fast keyplane's sender empties an outbox of 1,000 queued
// messages into a local receiver, and what one subscribed webhook costs provisioning, in rounds against
// the same webhook made inactive (an inactive webhook costs the trigger on key_events one probe of an
// index, the same as none: migrations/0006_webhooks.sql).

const QUEUED = 1_000;
const us = (seconds: number, n: number) => Math.round((1e6 * seconds) / n);

export interface WebhookTools {
  connections: number;
  rounds: number;
  seconds: number;
  say(text: string): void;
  metered(name: string, servers: Metered[], run: () => Promise<LoadResult>): Promise<LoadResult>;
  expectAnswers(what: string, result: LoadResult, allowed: string[]): void;
  problem(text: string): void;
}

export interface WebhookFigures {
  webhookDeliveriesPerSecond: number;
  webhookProvisioningVsNone: number;
}

/** A receiver that counts what it gets; while held, it answers nothing (the sender's attempts wait). */
async function startReceiver() {
  const held: ServerResponse[] = [];
  let holding = true;
  let received = 0;
  let last = 0;
  const server = createServer((req, res) => {
    req.resume().on("end", () => {
      received++;
      last = performance.now();
      if (holding) held.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bench`,
    received: () => received,
    lastAt: () => last,
    release() {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(204).end();
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** POST /keys of new keys by `token`, named `prefix-<n>`, for `duration` seconds or `amount` requests. */
function provision(url: string, token: string, prefix: string, connections: number, run: { duration?: number; amount?: number }): Promise<LoadResult> {
  let next = 0;
  const requests: autocannon.Request[] = [{
    method: "POST", path: "/keys", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    setupRequest: (request) => ({ ...request, body: JSON.stringify({ name: `${prefix}-${next++}` }) }),
  }];
  return load({ url, connections, requests, ...run });
}

export async function webhooksPhase(
  t: WebhookTools, a: Server, db: BenchDatabase, admin: Client, owner: { customer: string; token: string },
): Promise<{ figures: WebhookFigures; details: Record<string, string> }> {
  const receiver = await startReceiver();
  try {
    const made = await expectStatus(admin.request("POST", "/webhooks", { token: owner.token, body: { url: receiver.url, events: ["key.created"] } }), 201, "create the webhook");
    const hook = made.json<{ id: number }>().id;
    const pending = () => db.count(`SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ${hook} AND state = 'pending'`);

    // 1,000 messages queued while the receiver holds the sender's first attempts, then let go.
    t.say(`webhooks: ${QUEUED} key changes queued while the receiver holds the first attempts`);
    const queued = await provision(a.url, owner.token, "queued", 16, { amount: QUEUED });
    t.expectAnswers("webhooks: queueing", queued, ["200"]);
    const waitUntil = async (done: () => Promise<boolean>, what: string) => {
      const deadline = Date.now() + 60_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`webhooks: ${what} in 60 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await waitUntil(async () => (await pending()) === QUEUED, `${QUEUED} messages not queued`);
    const before = receiver.received();
    const cpu = cpuMeter({ [a.name]: a.pid }, db.name);
    const releasedAt = performance.now();
    receiver.release();
    await waitUntil(async () => receiver.received() >= QUEUED, `${QUEUED} messages not delivered`);
    const seconds = (receiver.lastAt() - releasedAt) / 1000;
    await waitUntil(async () => (await pending()) === 0, "deliveries not recorded");
    // What sending costs, per message: less disturbed by other work on the machine than the rate is.
    const used = cpu();
    if (receiver.received() !== QUEUED) t.problem(`webhooks: the receiver got ${receiver.received()} requests for ${QUEUED} messages`);
    const deliveriesPerSecond = round((QUEUED - before) / seconds, 0);

    // Provisioning with the webhook subscribed, against the same webhook inactive, in turn.
    const roundSeconds = t.seconds / 2;
    const setActive = (active: boolean) => expectStatus(admin.request("PUT", `/webhooks/${hook}`, { token: owner.token, body: { active } }), 200, "toggle the webhook");
    let runs = 0;
    const backlogs: number[] = [];
    t.say(`webhooks: provisioning with one webhook subscribed and with none, in turn, ${t.rounds} rounds of ${roundSeconds} s each, ${t.connections} connections`);
    const rounds = await inTurn(
      t.rounds,
      async (i) => {
        await setActive(false);
        return t.metered(`provisioning, no webhook ${i}`, [a], () => provision(a.url, owner.token, `plain-${runs++}`, t.connections, { duration: roundSeconds }));
      },
      async (i) => {
        await setActive(true);
        const result = await t.metered(`provisioning, one webhook ${i}`, [a], () => provision(a.url, owner.token, `hooked-${runs++}`, t.connections, { duration: roundSeconds }));
        // The sender yields to requests (a thread of lower priority): what it left for later is sent
        // before the next round, which must not pay for it.
        backlogs.push(await pending());
        await waitUntil(async () => (await pending()) === 0, "the round's messages not delivered");
        return result;
      },
    );
    for (const r of [...rounds.baselines, ...rounds.subjects]) t.expectAnswers("webhooks: provisioning", r, ["200"]);
    return {
      figures: { webhookDeliveriesPerSecond: deliveriesPerSecond, webhookProvisioningVsNone: round(median(rounds.ratios)) },
      details: {
        webhookDeliveriesPerSecond: `${QUEUED - before} messages in ${round(seconds, 3)} s from the receiver's release (${before} held attempts answered at once); ` +
          `CPU per message: keyplane ${us(used.servers[a.name]!, QUEUED)} µs, PostgreSQL ${us(used.postgres, QUEUED)} µs (with the polls that found nothing); queueing took ${round(queued.seconds, 2)} s`,
        webhookProvisioningVsNone: `${roundsDetail(rounds)}; messages still in the outbox when each round with the webhook ended: ${backlogs.join(", ")} (sent before the next round)`,
      },
    };
  } finally {
    await receiver.close();
  }
}
