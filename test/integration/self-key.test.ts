import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// `self` as a key-id (docs/api.md, "Keys"): the calling key on every operation of every key base, in
// both spellings, when it lies inside the path's scope; any other key's answer when it does not.
// Every effect is seen through another key (the customer's root key), not through the caller.
type Key = { id: number; keyId: string; name: string; active: boolean; replacedBy: number | null };
type Event = { action: string; actor: Record<string, unknown>; changes: Record<string, [unknown, unknown]> };

/** A level of key: how a fresh one is made, the scoped base naming its own scope, and its customer's path to that scope. */
interface Level {
  level: string;
  make(svc: TestService, t: Tenant, name: string): Promise<Key>;
  own(t: Tenant): string;
  parent(t: Tenant): string;
}

const d1 = (t: Tenant) => t.domains[0];

async function provisioned(svc: TestService, t: Tenant, path: string, name: string): Promise<Key> {
  const res = await svc.as(t.keys.customer).post(path, { name });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Key;
}

async function userKey(svc: TestService, t: Tenant, name: string, domain?: string): Promise<Key> {
  const res = await svc.admin.post(`/admin/customers/${t.name}/users`, { email: `${name}@${t.name}.example`, domain });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.key as Key;
}

const LEVELS: Level[] = [
  {
    level: "customer",
    make: (svc, t, name) => provisioned(svc, t, `/customers/${t.name}/keys`, name),
    own: (t) => `/customers/${t.name}/keys`,
    parent: (t) => `/customers/${t.name}/keys`,
  },
  {
    level: "domain",
    make: (svc, t, name) => provisioned(svc, t, `/customers/${t.name}/domains/${d1(t)}/keys`, name),
    own: (t) => `/domains/${d1(t)}/keys`,
    parent: (t) => `/customers/${t.name}/domains/${d1(t)}/keys`,
  },
  {
    level: "application",
    make: (svc, t, name) => provisioned(svc, t, `/customers/${t.name}/domains/${d1(t)}/applications/${t.application.name}/keys`, name),
    own: (t) => `/applications/${t.application.name}/keys`,
    parent: (t) => `/customers/${t.name}/domains/${d1(t)}/applications/${t.application.name}/keys`,
  },
  {
    level: "subscriber",
    make: (svc, t, name) => provisioned(svc, t, `/customers/${t.name}/domains/${d1(t)}/subscribers/${t.subscriber.msisdn}/keys`, name),
    own: (t) => `/subscribers/${t.subscriber.msisdn}/keys`,
    parent: (t) => `/customers/${t.name}/domains/${d1(t)}/subscribers/${t.subscriber.msisdn}/keys`,
  },
  {
    level: "customer user",
    make: (svc, t, name) => userKey(svc, t, name),
    own: (t) => `/customers/${t.name}/keys`,
    parent: (t) => `/customers/${t.name}/keys`,
  },
  {
    level: "domain user",
    make: (svc, t, name) => userKey(svc, t, name, d1(t)),
    own: (t) => `/domains/${d1(t)}/keys`,
    parent: (t) => `/customers/${t.name}/domains/${d1(t)}/keys`,
  },
];

/** Each level on /keys and on the scoped base of its own scope, each in both spellings. */
const CASES = LEVELS.flatMap((l) =>
  [
    { via: "/keys", base: () => "/keys" },
    { via: "its own scoped base", base: l.own },
  ].flatMap(({ via, base }) =>
    ["keys", "apikeys"].map((spelling) => ({
      ...l,
      label: `a ${l.level} key on ${via}, spelled ${spelling}`,
      base: (t: Tenant) => base(t).replace(/\/keys$/, `/${spelling}`),
    })),
  ),
);

describe.each(backends())("self as a key-id on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let root: ReturnType<TestService["as"]>;
  let made = 0;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    root = svc.as(acme.keys.customer);
  });
  afterAll(() => svc?.stop());

  const fresh = (c: Level) => c.make(svc, acme, `self-${++made}`);
  /** The key as its customer's root key sees it, by numeric id: 404 once it is gone. */
  const seen = (id: number) => root.get(`/customers/acme/keys/${id}`);
  const eventsOf = async (id: number) => {
    const res = await root.get(`/customers/acme/keys/${id}/events`);
    expect(res.status).toBe(200);
    return res.body as Event[];
  };
  const actorOf = (key: Key) => ({ type: "key", id: key.id, name: key.name });

  describe.each(CASES)("$label", (c) => {
    it("GET self is the calling key", async () => {
      const key = await fresh(c);
      const res = await svc.as(key.keyId).get(`${c.base(acme)}/self`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: key.id, keyId: key.keyId, name: key.name });
    });

    it("PUT self renames the calling key, recorded with the key as actor", async () => {
      const key = await fresh(c);
      const res = await svc.as(key.keyId).put(`${c.base(acme)}/self`, { name: `${key.name}-renamed` });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ id: key.id, name: `${key.name}-renamed` });
      expect((await seen(key.id)).body).toMatchObject({ name: `${key.name}-renamed`, active: true });
      expect((await eventsOf(key.id)).at(-1)).toMatchObject({ action: "updated", actor: actorOf(key), changes: { name: [key.name, `${key.name}-renamed`] } });
    });

    it("PUT self with active false disables the calling key: 200, then 401", async () => {
      const key = await fresh(c);
      const res = await svc.as(key.keyId).put(`${c.base(acme)}/self`, { active: false });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ id: key.id, active: false });
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
      expect((await svc.as(key.keyId).get(`${c.base(acme)}/self`)).status).toBe(401);
      expect((await seen(key.id)).body).toMatchObject({ active: false });
    });

    it("DELETE self deletes the calling key: 204, then 401, gone from its parent's list", async () => {
      const key = await fresh(c);
      expect((await svc.as(key.keyId).delete(`${c.base(acme)}/self`)).status).toBe(204);
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
      expect((await seen(key.id)).status).toBe(404);
      const list = await root.get(c.parent(acme));
      expect(list.status).toBe(200);
      expect((list.body as Key[]).map((k) => k.id)).not.toContain(key.id);
      expect((await eventsOf(key.id)).at(-1)).toMatchObject({ action: "deleted", actor: actorOf(key) });
    });

    it("POST self/rotate rotates the calling key", async () => {
      const key = await fresh(c);
      const res = await svc.as(key.keyId).post(`${c.base(acme)}/self/rotate`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const successor = res.body as Key;
      expect(successor).toMatchObject({ name: key.name, active: true });
      expect(successor.id).not.toBe(key.id);
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
      expect((await svc.as(successor.keyId).get("/keys/self")).body).toMatchObject({ id: successor.id });
      expect((await eventsOf(key.id)).at(-1)).toMatchObject({ action: "rotated", actor: actorOf(key), changes: { replacedBy: [null, successor.id] } });
    });

    it("GET self/events lists the calling key's events", async () => {
      const key = await fresh(c);
      expect((await svc.as(key.keyId).put(`${c.base(acme)}/self`, { name: `${key.name}-again` })).status).toBe(200);
      const res = await svc.as(key.keyId).get(`${c.base(acme)}/self/events`);
      expect(res.status).toBe(200);
      const events = res.body as Event[];
      expect(events.map((e) => e.action)).toEqual(["created", "updated"]);
      expect(events[1]).toMatchObject({ actor: actorOf(key), changes: { name: [key.name, `${key.name}-again`] } });
    });
  });

  // A base the caller may call whose scope lies inside the caller's, so the caller is not in it.
  describe.each([
    { label: "a customer key on a domain's base", level: LEVELS[0]!, base: (t: Tenant) => `/customers/${t.name}/domains/${d1(t)}/keys` },
    { label: "a domain key on an application's base", level: LEVELS[1]!, base: (t: Tenant) => `/domains/${d1(t)}/applications/${t.application.name}/apikeys` },
    { label: "a customer user's key on a subscriber's base", level: LEVELS[4]!, base: (t: Tenant) => `/tenants/${t.name}/domains/${d1(t)}/subscribers/${t.subscriber.msisdn}/apikeys` },
    { label: "a customer key on an application's base, its customer named self", level: LEVELS[0]!, base: (t: Tenant) => `/customers/self/domains/${d1(t)}/applications/${t.application.name}/apikeys` },
  ])("self outside the path's scope: $label", ({ level, base }) => {
    it("is 404 to GET, PUT, rotate and events, and DELETE is 204 deleting nothing", async () => {
      const key = await fresh(level);
      const caller = svc.as(key.keyId);
      const path = `${base(acme)}/self`;
      expect((await caller.get(path)).status).toBe(404);
      expect((await caller.put(path, { active: false })).status).toBe(404);
      expect((await caller.post(`${path}/rotate`)).status).toBe(404);
      expect((await caller.get(`${path}/events`)).status).toBe(404);
      expect((await caller.delete(path)).status).toBe(204);
      expect((await caller.get("/keys/self")).status).toBe(200);
      expect((await seen(key.id)).body).toMatchObject({ id: key.id, active: true, replacedBy: null });
      expect((await eventsOf(key.id)).map((e) => e.action)).toEqual(["created"]);
    });
  });
});
