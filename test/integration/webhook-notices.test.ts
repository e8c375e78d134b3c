import supertest from "supertest";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ExpiryNotices } from "../../src/services/webhooks/webhook-notices.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// The messages no key event carries (docs/webhooks.md): key.expiring at 7 days and at 1 day before a
// key's expiry, each once, and none whose time had passed when the key got its expiry;
// key.usage_exceeded once when a balance reaches 0, again only after a refill or a new balance.
interface Message { type: string; timestamp: string; data: { event: Record<string, unknown> } }
const DAY = 86_400_000;

describe.each(backends())("webhook notices on %s", (backend) => {
  const time = fakeClock("2026-11-23T10:00:00.000Z");
  let svc: TestService;
  let acme: Tenant;
  let receiver: Receiver;
  const hooks: number[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startService(backend, {
      clock: time.clock, expirySweepMs: 3_600_000,
      webhooks: { allowHttp: true, allowPrivate: true, expiryNoticeMs: 3_600_000, sender: { pollMs: 3_600_000 } },
    });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });
  beforeEach(async () => {
    for (const id of hooks.splice(0)) await svc.admin.delete(`/admin/webhooks/${id}`);
    receiver.received.length = 0;
  });

  const subscribe = async (token: string, events: string[]) => {
    const res = await svc.as(token).post("/webhooks", { url: `${receiver.url}/n`, events });
    expect(res.status).toBe(201);
    hooks.push((res.body as { id: number }).id);
  };
  /** Runs the notice sweep (on two processes' sweepers at once) and delivers: the messages it sent. */
  const sweep = async () => {
    const before = receiver.received.length;
    const other = new ExpiryNotices({ db: svc.database.db, clock: time.clock, log: svc.log }, [7 * 86_400, 86_400]);
    await Promise.all([svc.expiryNotices.sweep(), other.sweep()]);
    await svc.webhooks.drain();
    return receiver.received.slice(before).map((r) => JSON.parse(r.body) as Message);
  };
  const noticed = (messages: Message[]) => messages.map((m) => [(m.data.event as { name: string }).name, new Date(m.timestamp).getTime() - time.now().getTime()]);

  it("sends key.expiring at 7 days and at 1 day before the expiry, once each, the key without its token", async () => {
    await subscribe(acme.keys.customer, ["key.expiring"]);
    const c = svc.as(acme.keys.customer);
    const start = time.now().getTime();
    const tenDays = (await c.post("/keys", { name: "ten-days", expiresIn: 10 * 86_400 })).body as { id: number; keyId: string };
    await c.post("/keys", { name: "three-days", expiresIn: 3 * 86_400 });
    await c.post("/keys", { name: "later", expiresIn: 30 * 86_400 });
    const late = (await c.post("/keys", { name: "given-late" })).body as { id: number };
    expect(await sweep()).toEqual([]);

    // At 1 day, "given-late" gets an expiry 5 days ahead: its 7-day notice had passed by then.
    time.set(new Date(start + DAY));
    await c.put(`/keys/${late.id}`, { expiresAt: new Date(start + 6 * DAY).toISOString() });
    expect(await sweep()).toEqual([]);

    time.set(new Date(start + 2 * DAY - 1000));
    expect(await sweep()).toEqual([]);
    time.set(new Date(start + 2 * DAY));
    expect(noticed(await sweep())).toEqual([["three-days", 0]]);

    time.set(new Date(start + 3 * DAY));
    const sevenDays = await sweep();
    expect(noticed(sevenDays)).toEqual([["ten-days", 0]]);
    expect(sevenDays[0]).toMatchObject({ type: "key.expiring", data: { event: { id: tenDays.id, name: "ten-days", expiresAt: new Date(start + 10 * DAY).toISOString() } } });
    expect(sevenDays[0]!.data.event).not.toHaveProperty("keyId");
    expect(JSON.stringify(sevenDays)).not.toContain(tenDays.keyId);
    expect(await sweep()).toEqual([]);

    time.set(new Date(start + 5 * DAY));
    expect(noticed(await sweep())).toEqual([["given-late", 0]]);
    time.set(new Date(start + 9 * DAY + 3_600_000));
    expect(noticed(await sweep())).toEqual([["ten-days", 0]]);
    time.set(new Date(start + 23 * DAY));
    expect(noticed(await sweep())).toEqual([["later", 0]]);
    time.set(new Date(start + 29 * DAY));
    expect(noticed(await sweep())).toEqual([["later", 0]]);
    time.set(new Date(start + 40 * DAY));
    expect(await sweep()).toEqual([]);
  });

  it("sends key.usage_exceeded once when a key's balance reaches 0, and again after a new balance", async () => {
    await subscribe(acme.keys.customer, ["key.usage_exceeded"]);
    const c = svc.as(acme.keys.customer);
    const key = (await c.post("/keys", { name: "metered", policy: { credits: { remaining: 3 } } })).body as { id: number; keyId: string };
    const verify = async () => (await supertest(svc.app).post("/verify").send({ key: key.keyId, path: "/customers/acme/calls", method: "POST" })).body as { code: string };
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push((await verify()).code);
    expect(codes).toEqual(["VALID", "VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    await receiver.waitFor(1);
    await svc.webhooks.drain();
    const [message, ...more] = receiver.received.map((r) => JSON.parse(r.body) as Message);
    expect(more).toEqual([]);
    expect(message).toMatchObject({
      type: "key.usage_exceeded",
      data: { event: { scope: "key", tenantId: acme.id, domainId: null, key: { id: key.id, name: "metered" }, credits: { remaining: 0, nextRefillAt: null } } },
    });
    expect(JSON.stringify(message)).not.toContain(key.keyId);

    expect((await c.put(`/keys/${key.id}/credits`, { remaining: 1 })).status).toBe(200);
    // In force once announced: a verdict on a path the key may not reach charges nothing and says what is left.
    const left = async () => ((await supertest(svc.app).post("/verify").send({ key: key.keyId, path: "/customers/globex/calls" })).body as { credits?: { remaining: number } }).credits?.remaining;
    for (let i = 0; (await left()) !== 1; i++) {
      expect(i, "the new balance is in force").toBeLessThan(200);
      time.advance(100);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await verify()).code).toBe("VALID");
    expect((await verify()).code).toBe("USAGE_EXCEEDED");
    await receiver.waitFor(2);
    await svc.webhooks.drain();
    expect(receiver.received).toHaveLength(2);
  });

  it("sends a customer's balance used up to the webhooks at the customer's scope, not a domain's", async () => {
    await subscribe(acme.keys.customer, ["key.usage_exceeded"]);
    await subscribe(acme.keys.domain, ["key.usage_exceeded"]);
    expect((await svc.admin.put("/admin/customers/acme/policy", { credits: { remaining: 2, refill: { amount: 2, interval: "daily" } } })).status).toBe(200);
    time.advance(2_000);
    const verify = async () => (await supertest(svc.app).post("/verify").send({ key: acme.keys.domain, path: `/domains/${acme.domains[0]}/calls` })).body as { code: string };
    for (let i = 0; i < 4; i++) await verify();
    expect((await verify()).code).toBe("USAGE_EXCEEDED");
    await receiver.waitFor(1);
    await svc.webhooks.drain();
    const messages = receiver.received.map((r) => JSON.parse(r.body) as Message);
    expect(messages).toHaveLength(1);
    const day = Math.floor(time.now().getTime() / DAY) * DAY;
    expect(messages[0]!.data.event).toMatchObject({
      scope: "customer", tenantId: acme.id, domainId: null, key: null, credits: { remaining: 0, nextRefillAt: new Date(day + DAY).toISOString() },
    });
    // The next day's refill starts a new period: used up again, it is told again.
    time.set(new Date(day + DAY + 1000));
    for (let i = 0; i < 4; i++) await verify();
    await receiver.waitFor(2);
  });
});
