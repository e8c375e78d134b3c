import { createServer } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { httpWebhookClient } from "../../src/services/webhooks/webhook-client.ts";
import { systemResolver } from "../../src/services/webhooks/webhook-settings.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { signatureValid, startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Retries (docs/webhooks.md, "Retries"), on a clock the test moves: after a 5xx, a time-out or a
// refused connection, the next attempt comes 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after the one
// before (the jitter pinned to its middle here), and not a second sooner; then the delivery fails.
interface Delivery { id: number; state: string; attempts: { at: string; status: number | null; error: string | null }[]; nextAttemptAt: string | null }
const SCHEDULE_S = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
const TIMEOUT_MS = 300;

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.each(backends())("webhook retries on %s", (backend) => {
  const time = fakeClock();
  let svc: TestService;
  let acme: Tenant;
  let receiver: Receiver;
  let keys = 0;

  beforeAll(async () => {
    receiver = await startReceiver();
    const settings = { allowHttp: true, allowPrivate: true, resolve: systemResolver };
    svc = await startService(backend, {
      clock: time.clock,
      webhooks: { ...settings, client: httpWebhookClient(settings, { timeoutMs: TIMEOUT_MS }), sender: { random: () => 0.5, pollMs: 3_600_000 } },
      metrics: true,
    });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });
  const hooks: number[] = [];
  beforeEach(async () => {
    // Each test's webhooks alone: those of the tests before it are gone.
    for (const id of hooks.splice(0)) await svc.admin.delete(`/admin/webhooks/${id}`);
    receiver.release();
    receiver.received.length = 0;
  });

  /** A webhook at `url` for key.created, and one key created: its delivery after the first attempt. */
  async function firstAttempt(url: string): Promise<{ hook: number; delivery: () => Promise<Delivery> }> {
    const hook = ((await svc.as(acme.keys.customer).post("/webhooks", { url, events: ["key.created"] })).body as { id: number }).id;
    hooks.push(hook);
    await svc.as(acme.keys.customer).post("/keys", { name: `retried-${keys++}` });
    await svc.webhooks.drain();
    const delivery = async () => ((await svc.as(acme.keys.customer).get(`/webhooks/${hook}/deliveries`)).body as Delivery[])[0]!;
    return { hook, delivery };
  }

  /** Follows the schedule to its end: each attempt at its time, none a second before. */
  async function followSchedule(delivery: () => Promise<Delivery>): Promise<Delivery> {
    const attempted = async () => (await delivery()).attempts.length;
    for (const [i, seconds] of SCHEDULE_S.entries()) {
      const d = await delivery();
      expect(d.attempts).toHaveLength(i + 1);
      expect(d.state).toBe("pending");
      const last = new Date(d.attempts[i]!.at).getTime();
      expect(new Date(d.nextAttemptAt!).getTime() - last).toBe(seconds * 1000);
      time.set(new Date(last + seconds * 1000 - 1000));
      await svc.webhooks.drain();
      expect(await attempted(), `attempt ${i + 2} a second early`).toBe(i + 1);
      time.advance(1000);
      await svc.webhooks.drain();
      expect(await attempted(), `attempt ${i + 2}`).toBe(i + 2);
    }
    const d = await delivery();
    expect(d).toMatchObject({ state: "failed", nextAttemptAt: null });
    expect(d.attempts).toHaveLength(8);
    time.advance(86_400_000);
    await svc.webhooks.drain();
    expect(await attempted()).toBe(8);
    return d;
  }

  it("retries a 500 on the schedule, with the same webhook-id and a new signed timestamp each time, then fails", async () => {
    receiver.answer = () => ({ status: 500 });
    const other = (await svc.as(acme.keys.customer).post("/webhooks", { url: `${receiver.url}/secret-check`, events: ["key.deleted"] })).body as { id: number; secret: string };
    hooks.push(other.id);
    const { delivery } = await firstAttempt(`${receiver.url}/500`);
    const d = await followSchedule(delivery);
    expect(d.attempts.every((a) => a.status === 500 && a.error === null)).toBe(true);
    const sent = receiver.received.filter((r) => r.path === "/500");
    expect(sent).toHaveLength(8);
    expect(new Set(sent.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(new Set(sent.map((r) => r.headers["webhook-timestamp"])).size).toBe(8);
    expect(new Set(sent.map((r) => r.body)).size).toBe(1);
    expect(signatureValid(other.secret, sent[0]!)).toBe(false); // another webhook's secret does not verify it
  });

  it("counts attempts by result, and the outbox's depth and oldest message's age", async () => {
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(await svc.metrics!.text())?.[1]);
    expect(await metric('keyplane_webhook_deliveries_total{result="retrying"}')).toBe(7);
    expect(await metric('keyplane_webhook_deliveries_total{result="failed"}')).toBe(1);
    expect(await metric("keyplane_webhook_queue_depth")).toBe(0);
    receiver.answer = () => ({ status: 500 });
    await firstAttempt(`${receiver.url}/queued`);
    time.advance(4_000);
    expect(await metric("keyplane_webhook_queue_depth")).toBe(1);
    expect(await metric("keyplane_webhook_oldest_pending_seconds")).toBe(4);
  });

  it("retries a time-out on the schedule", async () => {
    receiver.answer = () => "hold";
    const { delivery } = await firstAttempt(`${receiver.url}/slow`);
    const first = await delivery();
    expect(first.attempts[0]).toMatchObject({ status: null, error: `timed out after ${TIMEOUT_MS / 1000} s` });
    const d = await followSchedule(delivery);
    expect(receiver.received.filter((r) => r.path === "/slow")).toHaveLength(8);
    expect(d.attempts.every((a) => a.error?.startsWith("timed out"))).toBe(true);
  });

  it("retries a refused connection on the schedule", async () => {
    const { delivery } = await firstAttempt(`http://127.0.0.1:${await closedPort()}/gone`);
    const d = await followSchedule(delivery);
    expect(d.attempts.every((a) => a.status === null && a.error === "connection refused")).toBe(true);
  });

  it("honours a Retry-After of up to an hour, and keeps its own schedule past that", async () => {
    receiver.answer = () => ({ status: 503, headers: { "retry-after": "120" } });
    const { delivery } = await firstAttempt(`${receiver.url}/later`);
    let d = await delivery();
    expect(new Date(d.nextAttemptAt!).getTime() - new Date(d.attempts[0]!.at).getTime()).toBe(120_000);
    receiver.answer = () => ({ status: 429, headers: { "retry-after": "7200" } });
    time.advance(120_000);
    await svc.webhooks.drain();
    d = await delivery();
    expect(d.attempts).toHaveLength(2);
    expect(new Date(d.nextAttemptAt!).getTime() - new Date(d.attempts[1]!.at).getTime()).toBe(300_000);
    receiver.answer = () => ({ status: 200 });
    time.advance(300_000);
    await svc.webhooks.drain();
    expect(await delivery()).toMatchObject({ state: "delivered", nextAttemptAt: null });
  });
});
