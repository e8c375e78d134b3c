import type autocannon from "autocannon";
import type { BenchDatabase } from "./database.ts";
import { client, expectStatus, type Client } from "./http.ts";
import { load, type LoadResult } from "./load.ts";
import { cpuMeter, startReceiver as startReceiverProcess, type Server } from "./processes.ts";
import { inTurn, median, round, roundsDetail, type RoundsTools } from "./rounds.ts";

// The webhooks phase (bench/README.md): how fast keyplane's sender empties an outbox of 1,000 queued
// messages into a local receiver, and what one subscribed webhook costs provisioning, in rounds against
// the same webhook made inactive (an inactive webhook costs the trigger on key_events one probe of an
// index, the same as none: migrations/0006_webhooks.sql).

const QUEUED = 1_000;
const us = (seconds: number, n: number) => Math.round((1e6 * seconds) / n);

export interface WebhookFigures {
  webhookDeliveriesPerSecond: number;
  webhookProvisioningVsNone: number;
}

/** The receiver (bench/receiver.ts), in a process of its own: what it got, and when the last came. */
async function startReceiver() {
  const server = await startReceiverProcess();
  const control = client(server.url, 1);
  const stats = async () => (await expectStatus(control.request("GET", "/stats"), 200, "receiver stats")).json<{ received: number; lastAt: number }>();
  return {
    url: `${server.url}/bench`,
    received: async () => (await stats()).received,
    /** When the last message came, on this process's performance.now() clock. */
    lastAt: async () => (await stats()).lastAt - performance.timeOrigin,
    release: () => expectStatus(control.request("POST", "/release"), 204, "release the receiver"),
    async close() {
      control.close();
      await server.stop();
    },
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
  t: RoundsTools, a: Server, db: BenchDatabase, admin: Client, owner: { customer: string; token: string },
): Promise<{ figures: WebhookFigures; details: Record<string, string> }> {
  const receiver = await startReceiver();
  try {
    const made = await expectStatus(admin.request("POST", "/webhooks", { token: owner.token, body: { url: receiver.url, events: ["key.created"] } }), 201, "create the webhook");
    const hook = made.json<{ id: number }>().id;
    const pending = () => db.count(`SELECT count(*) FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL AND webhook_id = ${hook}`);

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
    const before = await receiver.received();
    const cpu = cpuMeter({ [a.name]: a.pid }, db.name);
    const releasedAt = performance.now();
    await receiver.release();
    await waitUntil(async () => (await receiver.received()) >= QUEUED, `${QUEUED} messages not delivered`);
    const seconds = ((await receiver.lastAt()) - releasedAt) / 1000;
    await waitUntil(async () => (await pending()) === 0, "deliveries not recorded");
    // What sending costs, per message: less disturbed by other work on the machine than the rate is.
    const used = cpu();
    const received = await receiver.received();
    if (received !== QUEUED) t.problem(`webhooks: the receiver got ${received} requests for ${QUEUED} messages`);
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
