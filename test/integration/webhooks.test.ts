import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sweepExpiries } from "../../src/services/keys/expiry-sweep.ts";
import { BUSY_POLL_MS, YIELDING_BATCH } from "../../src/services/webhooks/webhook-sender.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { signatureValid, startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Webhooks through the API (docs/webhooks.md): who sees which, the secret shown once, and the messages
// a receiver gets for each key change: signed, with the key event, never a token.
interface Webhook { id: number; url: string; events: string[]; description: string | null; active: boolean; secret?: string }
interface Message { type: string; timestamp: string; data: { event: Record<string, unknown> } }
interface Delivery { id: number; type: string; state: string; attempts: { at: string; status: number | null; error: string | null }[]; nextAttemptAt: string | null }

describe.each(backends())("webhooks on %s", (backend) => {
  const time = fakeClock();
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let receiver: Receiver;
  /** What the sender is told of the key paths (src/webhook-worker.ts tells it in `keyplane serve`). */
  let keyPathsBusy = false;

  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startService(backend, {
      clock: time.clock, expirySweepMs: 3_600_000,
      webhooks: { allowHttp: true, allowPrivate: true, sender: { random: () => 0.5, pollMs: 3_600_000, yieldTo: () => keyPathsBusy } },
    });
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 204 });
  });

  const create = async (token: string, body: Record<string, unknown>) => {
    const res = await svc.as(token).post("/webhooks", body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as Webhook;
  };
  const messages = () => receiver.received.map((r) => JSON.parse(r.body) as Message);
  const remove = async (...hooks: Webhook[]) => {
    for (const h of hooks) expect((await svc.admin.delete(`/admin/webhooks/${h.id}`)).status).toBe(204);
  };

  it("shows the secret once, and a key only the webhooks inside its scope (another's is 404)", async () => {
    const hook = await create(acme.keys.domain, { url: `${receiver.url}/d`, description: "ops" });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(hook).toMatchObject({ url: `${receiver.url}/d`, description: "ops", active: true, domainId: acme.domainIds[0], applicationId: null });
    expect(hook.events).toEqual(["key.created", "key.updated", "key.rotated", "key.deleted", "key.expired", "key.expiring", "key.leaked", "key.usage_exceeded"]);

    const got = await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty("secret");
    expect(JSON.stringify((await svc.as(acme.keys.customer).get("/webhooks")).body)).not.toContain(hook.secret);
    expect(((await svc.as(acme.keys.customer).get("/webhooks")).body as Webhook[]).map((w) => w.id)).toContain(hook.id);
    expect(((await svc.admin.get("/admin/webhooks")).body as Webhook[]).map((w) => w.id)).toContain(hook.id);

    // Outside the webhook's scope: another domain's key, an application's, another customer's.
    for (const token of [acme.keys.otherDomain, acme.keys.application, globex.keys.customer]) {
      expect((await svc.as(token).get("/webhooks")).body).toEqual([]);
      for (const res of [
        await svc.as(token).get(`/webhooks/${hook.id}`), await svc.as(token).put(`/webhooks/${hook.id}`, { active: false }),
        await svc.as(token).delete(`/webhooks/${hook.id}`), await svc.as(token).get(`/webhooks/${hook.id}/deliveries`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ status: 404, error: "not_found", message: "No such webhook." });
      }
    }
    expect((await svc.as(acme.keys.customer).get("/webhooks/nope")).status).toBe(404);
    await remove(hook);
    expect((await svc.as(acme.keys.domain).get(`/webhooks/${hook.id}`)).status).toBe(404);
  });

  it("sends each change of a key inside its scope, signed, with the key event and no token", async () => {
    const hook = await create(acme.keys.domain, { url: `${receiver.url}/hook` });
    const dom = svc.as(acme.keys.domain);
    const key = (await dom.post("/keys", { name: "webhooked" })).body as { id: number; keyId: string };
    await dom.put(`/keys/${key.id}`, { name: "webhooked-2" });
    const successor = (await dom.post(`/keys/${key.id}/rotate`, {})).body as { id: number; keyId: string };
    await dom.delete(`/keys/${successor.id}`);
    // Outside the scope: another domain's key.
    await svc.as(acme.keys.customer).post(`/customers/acme/domains/${acme.domains[1]}/keys`, { name: "elsewhere" });

    const received = await receiver.waitFor(5);
    await svc.webhooks.drain();
    expect(receiver.received).toHaveLength(5);
    for (const r of received) {
      expect(signatureValid(hook.secret!, r)).toBe(true);
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["webhook-id"]).toMatch(/^msg_\d+$/);
      expect(Number(r.headers["webhook-timestamp"])).toBe(Math.floor(time.now().getTime() / 1000));
      expect(r.body).not.toContain(key.keyId);
      expect(r.body).not.toContain(successor.keyId);
    }
    const got = messages().sort((a, b) => (a.data.event.id as number) - (b.data.event.id as number));
    // (A rotation's two events are written by one statement, in either order.)
    expect(got.map((m) => [m.type, (m.data.event.key as { id: number }).id]).sort()).toEqual([
      ["key.created", key.id], ["key.updated", key.id], ["key.rotated", key.id], ["key.created", successor.id], ["key.deleted", successor.id],
    ].sort());
    // The event is the one GET /events shows, field for field.
    const events = (await dom.get(`/keys/${key.id}/events`)).body as Record<string, unknown>[];
    expect(got[1]!.data.event).toEqual(events[1]);
    expect(got[1]).toEqual({ type: "key.updated", timestamp: events[1]!.at, data: { event: events[1] } });
    expect(Object.keys(JSON.parse(receiver.received[0]!.body))).toEqual(["type", "timestamp", "data"]);
    await remove(hook);
  });

  it("sends only the types it subscribes to, to webhooks whose scope holds the key, and the expiry the sweep records", async () => {
    await sweepExpiries(svc.ctx); // what expired before this test (a rotated key) is recorded before its webhooks exist
    const deletions = await create(acme.keys.customer, { url: `${receiver.url}/deleted`, events: ["key.deleted", "key.expired"] });
    const app = await create(acme.keys.application, { url: `${receiver.url}/app` });
    const cust = svc.as(acme.keys.customer);
    const k = (await cust.post("/keys", { name: "short", expiresIn: 60 })).body as { id: number };
    const d = (await cust.post("/keys", { name: "deleted" })).body as { id: number };
    await cust.delete(`/keys/${d.id}`);
    // Delivered before the clock moves past the attempt's lease: else it would count as abandoned, and be sent again.
    await svc.webhooks.drain();
    time.advance(61_000);
    await sweepExpiries(svc.ctx);
    await receiver.waitFor(2);
    await svc.webhooks.drain();
    expect(receiver.received.map((r) => r.path)).toEqual(["/deleted", "/deleted"]);
    expect(messages().map((m) => [m.type, (m.data.event.key as { id: number }).id])).toEqual([["key.deleted", d.id], ["key.expired", k.id]]);
    await remove(deletions, app);
  });

  it("sends key.leaked for a key a scanner reported, from the leaked event alone", async () => {
    const hook = await create(acme.keys.customer, { url: `${receiver.url}/leaked`, events: ["key.leaked"] });
    const key = (await svc.as(acme.keys.customer).post("/keys", { name: "leaky" })).body as { id: number; keyId: string };
    const report = await svc.admin.post("/admin/leaks", { tokens: [key.keyId], url: "https://paste.example/1", source: "paste" });
    expect(report.status, JSON.stringify(report.body)).toBe(200);
    const [r] = await receiver.waitFor(1);
    await svc.webhooks.drain();
    expect(receiver.received).toHaveLength(1);
    expect(signatureValid(hook.secret!, r!)).toBe(true);
    const message = JSON.parse(r!.body) as Message;
    expect(message).toMatchObject({ type: "key.leaked", data: { event: { action: "leaked", key: { id: key.id }, actor: { type: "scanner", name: "admin" } } } });
    expect(r!.body).not.toContain(key.keyId);
    await remove(hook);
  });

  it("sends every key's changes to the admin's webhook of no scope, and a scope's to one the body names", async () => {
    const all = (await svc.admin.post("/admin/webhooks", { url: `${receiver.url}/all`, events: ["key.created"] })).body as Webhook;
    const globexOnly = (await svc.admin.post("/admin/webhooks", { url: `${receiver.url}/globex`, events: ["key.created"], scope: { customer: "globex" } })).body as Webhook;
    expect(all).toMatchObject({ tenantId: null, domainId: null });
    expect(globexOnly).toMatchObject({ tenantId: globex.id, domainId: null });
    expect((await svc.admin.post("/admin/webhooks", { url: receiver.url, scope: { customer: "nobody" } })).body)
      .toEqual({ status: 404, error: "not_found", message: "No such customer." });
    expect(((await svc.as(globex.keys.customer).get("/webhooks")).body as Webhook[]).map((w) => w.id)).toEqual([globexOnly.id]);

    await svc.as(acme.keys.customer).post("/keys", { name: "for-all" });
    await svc.as(globex.keys.customer).post("/keys", { name: "for-both" });
    await receiver.waitFor(3);
    await svc.webhooks.drain();
    expect(receiver.received.map((r) => r.path).sort()).toEqual(["/all", "/all", "/globex"]);
    await remove(all, globexOnly);
  });

  it("stops a webhook whose receiver answers 410 Gone, and follows no redirect", async () => {
    const other = await startReceiver();
    try {
      const hook = await create(acme.keys.customer, { url: `${receiver.url}/moved`, events: ["key.created"] });
      receiver.answer = () => ({ status: 302, headers: { location: `${other.url}/elsewhere` } });
      await svc.as(acme.keys.customer).post("/keys", { name: "redirected" });
      await receiver.waitFor(1);
      await svc.webhooks.drain();
      let [delivery] = (await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries`)).body as Delivery[];
      expect(delivery).toMatchObject({ type: "key.created", state: "pending", attempts: [{ status: 302, error: null }] });
      expect(other.received).toHaveLength(0);

      receiver.answer = () => ({ status: 410 });
      time.advance(5_000);
      await svc.webhooks.drain();
      [delivery] = (await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries`)).body as Delivery[];
      expect(delivery).toMatchObject({ state: "failed", nextAttemptAt: null, attempts: [{ status: 302 }, { status: 410 }] });
      expect((await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}`)).body).toMatchObject({ active: false });

      await svc.as(acme.keys.customer).post("/keys", { name: "unsent" });
      await svc.webhooks.drain();
      expect(receiver.received).toHaveLength(2);
      expect((await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries`)).body).toHaveLength(1);

      // Active again, it gets what happens from then on.
      receiver.answer = () => ({ status: 200 });
      expect((await svc.as(acme.keys.customer).put(`/webhooks/${hook.id}`, { active: true, events: ["key.created", "key.created"] })).body)
        .toMatchObject({ active: true, events: ["key.created"] });
      await svc.as(acme.keys.customer).post("/keys", { name: "sent-again" });
      await receiver.waitFor(3);
      await remove(hook);
    } finally {
      await other.close();
    }
  });

  it("pages its deliveries newest first, with a Link to the next page", async () => {
    const hook = await create(acme.keys.customer, { url: `${receiver.url}/paged`, events: ["key.created"] });
    for (let i = 0; i < 5; i++) await svc.as(acme.keys.customer).post("/keys", { name: `paged-${i}` });
    await receiver.waitFor(5);
    await svc.webhooks.drain();
    const first = await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries?limit=2`);
    const page = first.body as Delivery[];
    expect(page).toHaveLength(2);
    expect(page[0]!.id).toBeGreaterThan(page[1]!.id);
    expect(page[0]).toMatchObject({ state: "delivered", nextAttemptAt: null, attempts: [{ status: 204, error: null }] });
    expect(first.headers.link).toBe(`</webhooks/${hook.id}/deliveries?limit=2&before=${page[1]!.id}>; rel="next"`);
    const rest = (await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries?before=${page[1]!.id}`)).body as Delivery[];
    expect(rest).toHaveLength(3);
    expect((await svc.admin.get(`/admin/webhooks/${hook.id}/deliveries?state=delivered`)).body).toHaveLength(5);
    expect((await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries?limit=0`)).status).toBe(400);
    await remove(hook);
  });

  it("sends slowly while the key paths are busy, a batch at each 100 ms at most, and the rest once they are not", { timeout: 30_000 }, async () => {
    const hook = await create(acme.keys.customer, { url: `${receiver.url}/busy`, events: ["key.created"] });
    // The sender's first 32 attempts held by the receiver, and 168 messages waiting in the outbox.
    receiver.answer = () => "hold";
    for (let i = 0; i < 200; i++) expect((await svc.as(acme.keys.customer).post("/keys", { name: `busy-${i}` })).status).toBe(200);
    await receiver.waitFor(32);
    keyPathsBusy = true;
    receiver.answer = () => ({ status: 204 });
    const released = performance.now();
    receiver.release(204);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sent = receiver.received.length - 32;
    const ticks = Math.ceil((performance.now() - released) / BUSY_POLL_MS);
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThanOrEqual(YIELDING_BATCH * (ticks + 1));
    keyPathsBusy = false;
    await receiver.waitFor(200, 20_000);
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(200);
    await svc.webhooks.drain();
    await remove(hook);
  });

  it("refuses bad input with 400, never 500", async () => {
    const c = svc.as(acme.keys.customer);
    for (const body of [
      {}, { url: 7 }, { url: "ftp://x.example/" }, { url: "not a url" }, { url: `${receiver.url}/`, events: [] },
      { url: `${receiver.url}/`, events: ["key.made"] }, { url: `${receiver.url}/`, description: 5 }, { url: `${receiver.url}/`, description: "d".repeat(257) },
      { url: "http://user:pw@hooks.example/" },
    ]) {
      const res = await c.post("/webhooks", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ status: 400, error: "bad_request" });
    }
    expect((await svc.admin.post("/admin/webhooks", { url: receiver.url, scope: { application: "ivr" } })).status).toBe(400);
  });
});
