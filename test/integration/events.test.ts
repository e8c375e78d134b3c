import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyStoreFor } from "../../src/operator/reconcile/keystore.ts";
import { sweepExpiries } from "../../src/services/keys/expiry-sweep.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Events (docs/api.md, "Events"): every change to a key, with its actor and its changes, written in the
// same transaction as the change, readable per key and per caller, and never holding a token.
type Key = { id: number; keyId: string; name: string; expiresAt: string | null };
interface Event {
  id: number;
  at: string;
  action: string;
  key: { id: number; name: string; type: string; tenantId: number; domainId: number | null; applicationId: number | null; subscriberId: number | null };
  actor: Record<string, unknown>;
  changes: Record<string, [unknown, unknown]>;
  requestId: string | null;
}
const SECOND = 1000;

describe.each(backends())("events on %s", (backend) => {
  const time = fakeClock();
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let root: ReturnType<TestService["as"]>;
  let rootKey: Key;

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    root = svc.as(acme.keys.customer);
    rootKey = (await root.get("/keys/self")).body as Key;
  });
  afterAll(() => svc?.stop());

  const eventsOf = async (id: number) => {
    const res = await root.get(`/keys/${id}/events`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Event[];
  };
  const byRoot = () => ({ type: "key", id: rootKey.id, name: rootKey.name });
  const iso = () => time.now().toISOString();

  it("records each action with its actor, its changes and the request's id", async () => {
    const created = (await root.post("/keys", { name: "audited", expiresIn: 3600 }).set("X-Request-Id", "req-create")).body as Key;
    const t0 = iso();
    time.advance(SECOND);
    await root.put(`/keys/${created.id}`, { name: "audited-2", active: false, expiresAt: null }).set("X-Request-Id", "req-update");
    const t1 = iso();
    time.advance(SECOND);
    await root.put(`/keys/${created.id}`, { active: true });
    await root.put(`/keys/${created.id}`, {}); // changes nothing: no event
    const t2 = iso();
    time.advance(SECOND);
    const successor = (await root.post(`/keys/${created.id}/rotate`, { gracePeriodSeconds: 60 })).body as Key;
    const t3 = iso();
    time.advance(SECOND);
    await root.delete(`/keys/${successor.id}`).set("X-Request-Id", "req-delete");
    const t4 = iso();
    time.advance(61 * SECOND);
    await sweepExpiries(svc.ctx);

    const key = { id: created.id, name: "audited-2", type: "customer", tenantId: acme.id, domainId: null, applicationId: null, subscriberId: null };
    expect(await eventsOf(created.id)).toEqual([
      { id: expect.any(Number), at: t0, action: "created", key: { ...key, name: "audited" }, actor: byRoot(), requestId: "req-create",
        changes: { name: [null, "audited"], active: [null, true], expiresAt: [null, created.expiresAt] } },
      { id: expect.any(Number), at: t1, action: "updated", key, actor: byRoot(), requestId: "req-update",
        changes: { name: ["audited", "audited-2"], active: [true, false], expiresAt: [created.expiresAt, null] } },
      { id: expect.any(Number), at: t2, action: "updated", key, actor: byRoot(), requestId: expect.any(String), changes: { active: [false, true] } },
      { id: expect.any(Number), at: t3, action: "rotated", key, actor: byRoot(), requestId: expect.any(String),
        changes: { replacedBy: [null, successor.id], expiresAt: [null, new Date(Date.parse(t3) + 60 * SECOND).toISOString()] } },
      { id: expect.any(Number), at: new Date(Date.parse(t3) + 60 * SECOND).toISOString(), action: "expired", key, actor: { type: "system" }, requestId: null, changes: {} },
    ]);
    expect(await eventsOf(successor.id)).toEqual([
      { id: expect.any(Number), at: t3, action: "created", key: { ...key, id: successor.id }, actor: byRoot(), requestId: expect.any(String),
        changes: { name: [null, "audited-2"], active: [null, true] } },
      { id: expect.any(Number), at: t4, action: "deleted", key: { ...key, id: successor.id }, actor: byRoot(), requestId: "req-delete",
        changes: { deletedAt: [null, t4] } },
    ]);
    // Oldest first, by id.
    const ids = (await eventsOf(created.id)).map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("names the admin, the operator and the runtime as actors", async () => {
    const bootstrap = (await svc.admin.post("/admin/customers/acme/keys", { name: "bootstrap" })).body as Key;
    expect((await eventsOf(bootstrap.id))[0]).toMatchObject({ action: "created", actor: { type: "admin" } });

    const runtime = (await svc.admin.post(`/admin/customers/acme/domains/${acme.domains[0]}/applications/ivr/runtime-key`)).body as Key;
    expect((await eventsOf(runtime.id))[0]).toMatchObject({ action: "created", actor: { type: "runtime" }, requestId: null });

    const store = keyStoreFor(svc.ctx);
    const scope = { tenantId: acme.id, domainId: acme.domainIds[0], applicationId: null, subscriberId: null };
    await store.provision(scope, "from-gitops", true, "team-a/billing");
    const managed = (await store.findKey(scope, "from-gitops"))!;
    await store.update(managed, { active: false }, "team-a/billing");
    await store.delete(managed, "team-a/billing");
    const operator = { type: "operator", apiKey: "team-a/billing" };
    expect((await eventsOf(managed.id)).map((e) => [e.action, e.actor])).toEqual([["created", operator], ["updated", operator], ["deleted", operator]]);
  });

  it("records a deleted event, actor admin, for each live key an admin deletion takes with it", async () => {
    const d = acme.domains[1];
    const domainKey = (await root.post(`/customers/acme/domains/${d}/keys`, { name: "in-domain" })).body as Key;
    const gone = (await root.post(`/customers/acme/domains/${d}/keys`, { name: "already-gone" })).body as Key;
    await root.delete(`/keys/${gone.id}`);
    await svc.admin.post(`/admin/customers/acme/domains/${d}/applications`, { name: "doomed-app" });
    const appKey = (await root.post(`/customers/acme/domains/${d}/applications/doomed-app/keys`, { name: "in-app" })).body as Key;
    await svc.admin.post(`/admin/customers/acme/domains/${d}/subscribers`, { msisdn: "15550009999" });
    const subKey = (await root.post(`/customers/acme/domains/${d}/subscribers/15550009999/keys`, { name: "in-sub" })).body as Key;

    const deletions = async (id: number) => (await eventsOf(id)).filter((e) => e.action === "deleted");
    expect((await svc.admin.delete(`/admin/customers/acme/domains/${d}/applications/doomed-app`).set("X-Request-Id", "admin-1")).status).toBe(204);
    expect(await deletions(appKey.id)).toEqual([expect.objectContaining({ actor: { type: "admin" }, requestId: "admin-1" })]);
    expect((await svc.admin.delete(`/admin/customers/acme/domains/${d}/subscribers/15550009999`)).status).toBe(204);
    expect(await deletions(subKey.id)).toHaveLength(1);
    expect((await svc.admin.delete(`/admin/customers/acme/domains/${d}`)).status).toBe(204);
    expect(await deletions(domainKey.id)).toEqual([expect.objectContaining({ actor: { type: "admin" } })]);
    // A key deleted before keeps its one deleted event, by the key that deleted it.
    expect(await deletions(gone.id)).toEqual([expect.objectContaining({ actor: byRoot() })]);
  });

  it("leaves no event for a change that failed, or that changed nothing", async () => {
    const a = (await root.post("/keys", { name: "first" })).body as Key;
    const b = (await root.post("/keys", { name: "second" })).body as Key;
    const before = await eventsOf(b.id);
    expect((await root.put(`/keys/${b.id}`, { name: "first", active: false })).status).toBe(409);
    expect((await root.put(`/keys/${b.id}`, { expiresAt: "2020-01-01T00:00:00Z" })).status).toBe(400);
    expect((await root.post("/keys", { name: "second", active: false })).body).toMatchObject({ id: b.id });
    expect(await eventsOf(b.id)).toEqual(before);
    expect((await root.get(`/keys/${b.id}`)).body).toMatchObject({ name: "second", active: true });
    await root.post(`/keys/${a.id}/rotate`, { gracePeriodSeconds: 60 });
    const rotatedOnce = await eventsOf(a.id);
    expect((await root.post(`/keys/${a.id}/rotate`)).status).toBe(409);
    expect(await eventsOf(a.id)).toEqual(rotatedOnce);
  });

  it("cannot be changed or removed: the table is append-only", async () => {
    await expect(svc.ctx.db.query("UPDATE key_events SET action = 'created'")).rejects.toThrow(/append-only/);
    await expect(svc.ctx.db.query("DELETE FROM key_events")).rejects.toThrow(/append-only/);
    await expect(svc.ctx.db.query("TRUNCATE key_events")).rejects.toThrow(/append-only/);
  });

  it("lists the caller's keys' events newest first, paged by limit and before, filtered by action", async () => {
    const all = (await root.get("/events?limit=1000")).body as Event[];
    expect(all.length).toBeGreaterThan(10);
    const ids = all.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(all.every((e) => e.key.tenantId === acme.id)).toBe(true);

    const pages: Event[] = [];
    let next: string | undefined = "/events?limit=4&action=created";
    while (next) {
      const res = await root.get(next);
      expect(res.status).toBe(200);
      pages.push(...(res.body as Event[]));
      next = res.headers.link?.match(/^<([^>]+)>; rel="next"$/)?.[1];
      if (next) expect(next).toMatch(/action=created/);
    }
    expect(pages.map((e) => e.id)).toEqual(all.filter((e) => e.action === "created").map((e) => e.id));

    const before = all[2]!.id;
    expect(((await root.get(`/events?before=${before}&limit=2`)).body as Event[]).map((e) => e.id)).toEqual(ids.slice(3, 5));
    expect((await root.get("/events?limit=1000000000")).status).toBe(400);
  });

  it("shows a domain key only its domain's keys' events, and the admin everyone's", async () => {
    const domainEvents = (await svc.as(acme.keys.domain).get("/events?limit=1000")).body as Event[];
    expect(domainEvents.length).toBeGreaterThan(0);
    expect(domainEvents.every((e) => e.key.tenantId === acme.id && e.key.domainId === acme.domainIds[0])).toBe(true);
    const admin = (await svc.admin.get("/admin/events?limit=1000")).body as Event[];
    const tenants = new Set(admin.map((e) => e.key.tenantId));
    expect(tenants).toEqual(new Set([acme.id, globex.id]));
    expect((await root.get("/admin/events")).status).toBe(401);
    expect((await svc.admin.get("/events")).status).toBe(401);
  });

  it("reads a deleted or expired key's events by numeric id, never by its token, and only inside the caller's scope", async () => {
    const key = (await root.post(`/customers/acme/domains/${acme.domains[0]}/keys`, { name: "history" })).body as Key;
    await root.delete(`/keys/${key.id}`);
    expect((await eventsOf(key.id)).map((e) => e.action)).toEqual(["created", "deleted"]);
    expect((await svc.as(acme.keys.domain).get(`/keys/${key.id}/events`)).status).toBe(200);
    expect((await root.get(`/keys/${key.keyId}/events`)).status).toBe(404);
    // (acme.keys.otherDomain went with its domain above.)
    const outsiders = [svc.as(acme.keys.subscriber), svc.as(acme.keys.application), svc.as(globex.keys.customer)];
    const missing = await root.get("/keys/2147483647/events");
    for (const outsider of outsiders) {
      const res = await outsider.get(`/keys/${key.id}/events`);
      expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: missing.body });
    }
    expect((await svc.as(globex.keys.customer).get(`/customers/acme/keys/${key.id}/events`)).status).toBe(401);
  });

  it("holds no token, in any event, in any form", async () => {
    const tokens = [...Object.values(acme.keys), ...Object.values(globex.keys)];
    const made = (await root.post("/keys", { name: "secretive" })).body as Key;
    const rotated = (await root.post(`/keys/${made.id}/rotate`)).body as Key;
    tokens.push(made.keyId, rotated.keyId);
    const rows = await svc.ctx.db.query<{ row: string }>("SELECT e::text AS row FROM key_events e");
    const listed = JSON.stringify((await svc.admin.get("/admin/events?limit=1000")).body);
    for (const text of [...rows.map((r) => r.row), listed]) {
      expect(text).not.toMatch(/XI[0-9A-F]{32}/i);
      for (const token of tokens) expect(text).not.toContain(token.slice(2));
    }
    expect(rows.length).toBeGreaterThan(20);
  });

  it("refuses a before or limit that is not an id, and an unknown action", async () => {
    for (const query of ["before=abc", "before=0", "before=-1", "before=1.5", "limit=0", "limit=abc", "action=renamed", "before=99999999999999999999"]) {
      for (const res of [await root.get(`/events?${query}`), await svc.admin.get(`/admin/events?${query}`)]) {
        expect(res.status, query).toBe(400);
        expect(res.body).toEqual({ status: 400, error: "bad_request", message: expect.any(String) });
      }
    }
    expect((await root.get(`/keys/${rootKey.id}/events?action=nope`)).status).toBe(400);
  });
});
