// Restricted keys (docs/api.md, "Restricted keys"): a key's policy binds the keys it makes, and a
// restricted key reaches only itself and its descendants. Written as a partner would try it: a partner
// key its customer gave an IP restriction, one request an hour and 3 credits makes friends, and tries
// every route to more through them. Beside the attacks, what stays as it was for unrestricted keys.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { keyObject } from "../../src/http/schemas.ts";
import { ok as expectOk, refused, type Answering } from "../support/answers.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

type Key = { id: number; keyId: string; name: string; parentId: number | null; policy: Record<string, unknown> | null };
type Verdict = { valid: boolean; code: string; reason?: string; ratelimits?: { name: string; scope: string; id?: number; remaining: number }[]; credits?: { remaining: number } };
type Event = { key: { id: number } };

/** Where the partner works from: its policy allows this network only. */
const PARTNER_NET = "203.0.113.0/24";
const INSIDE = "203.0.113.7";
const OUTSIDE = "198.51.100.1";
const partnerPolicy = {
  restrictions: { ips: [PARTNER_NET] },
  ratelimits: [{ name: "hourly", limit: 1, windowSeconds: 3600 }],
  credits: { remaining: 3 },
};

describe.each(backends())("restricted keys on %s", (backend) => {
  // Ten minutes into an hour: the hour's window holds for every test here.
  const time = fakeClock("2026-11-23T10:10:00.000Z");
  let svc: TestService;
  let acme: Tenant;
  let root: ReturnType<TestService["as"]>;
  let rootKey: Key;
  let partner: Key;
  let sibling: Key;
  let friend: Key;

  /** Requests as `token`, from `from` (the partner's network unless said otherwise). */
  const as = (token: string, from = INSIDE) => {
    const agent = supertest(svc.app);
    const auth = (r: supertest.Test) => r.set("Authorization", `Bearer ${token}`).set("X-Forwarded-For", from);
    return {
      get: (path: string) => auth(agent.get(path)),
      delete: (path: string) => auth(agent.delete(path)),
      post: (path: string, body?: object) => auth(agent.post(path)).send(body),
      put: (path: string, body?: unknown) => auth(agent.put(path)).set("Content-Type", "application/json").send(JSON.stringify(body)),
    };
  };
  const ok: <T = Key>(request: Answering, status?: number) => Promise<T> = expectOk;
  const verify = async (key: string, ip = INSIDE): Promise<Verdict> => ok<Verdict>(supertest(svc.app).post("/verify").send({ key, ip }));
  const d = () => acme.domains[0];

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, trustedProxies: parseTrustedProxies("127.0.0.1,::1"), expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    acme = await createTenant(svc, "acme");
    root = svc.as(acme.keys.customer);
    rootKey = await ok(root.get("/keys/self"));
    partner = await ok(root.post("/keys", { name: "partner", policy: partnerPolicy }));
    sibling = await ok(root.post("/keys", { name: "sibling" }));
    friend = await ok(as(partner.keyId).post("/keys", { name: "friend" }));
  });
  afterAll(() => svc?.stop());

  describe("lineage", () => {
    it("records who made a key: parentId, null for the admin's keys", async () => {
      expect(keyObject.safeParse(friend).error).toBeUndefined();
      expect(rootKey.parentId).toBeNull();
      expect(partner.parentId).toBe(rootKey.id);
      expect(friend.parentId).toBe(partner.id);
      expect(friend.policy).toBeNull();
      expect((await ok(root.get(`/keys/${friend.id}`))).parentId).toBe(partner.id);
    });
  });

  describe("a key a restricted key makes is bound by its maker's policy", () => {
    it("shares the maker's hourly limit, and names the maker in the verdict", async () => {
      const first = await verify(friend.keyId);
      expect(first).toMatchObject({ valid: true, code: "VALID" });
      expect(first.ratelimits).toEqual([expect.objectContaining({ name: "hourly", scope: "key", id: partner.id, remaining: 0 })]);
      // The hour's one request is spent, by either of them.
      expect(await verify(partner.keyId)).toMatchObject({ code: "RATE_LIMITED" });
      expect(await verify(friend.keyId)).toMatchObject({ code: "RATE_LIMITED" });
    });

    it("is refused outside the maker's network, on /verify and on the key paths", async () => {
      expect(await verify(friend.keyId, OUTSIDE)).toMatchObject({ code: "RESTRICTED", reason: "ip" });
      await refused(as(friend.keyId, OUTSIDE).get("/keys/self"), 403, "forbidden");
      await refused(as(friend.keyId, OUTSIDE).get("/keys"), 403, "forbidden");
    });

    it("shares the maker's credits, however many generations down", async () => {
      const metered = await ok(root.post("/keys", { name: "metered", policy: { credits: { remaining: 3 } } }));
      const child = await ok(as(metered.keyId).post("/keys", { name: "child" }));
      const grandchild = await ok(as(child.keyId).post("/keys", { name: "grandchild", policy: { credits: { remaining: 1000 } } }));
      expect(grandchild.parentId).toBe(child.id);
      expect(await verify(child.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 2 } });
      expect(await verify(grandchild.keyId)).toMatchObject({ code: "VALID" });
      expect(await verify(metered.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
      // Its own 1,000 credits loosen nothing: the ancestor's balance is empty.
      expect(await verify(grandchild.keyId)).toMatchObject({ code: "USAGE_EXCEEDED" });
      expect(await verify(child.keyId)).toMatchObject({ code: "USAGE_EXCEEDED" });
    });

    it("binds at once a key made before its maker got a policy", async () => {
      const maker = await ok(root.post("/keys", { name: "late" }));
      const made = await ok(svc.as(maker.keyId).post("/keys", { name: "made-early" }));
      expect(await verify(made.keyId)).toMatchObject({ code: "VALID" });
      await ok(root.put(`/keys/${maker.id}`, { policy: { restrictions: { ips: [PARTNER_NET] } } }));
      expect(await verify(made.keyId, OUTSIDE)).toMatchObject({ code: "RESTRICTED", reason: "ip" });
    });
  });

  describe("a restricted key reaches only itself and its descendants", () => {
    it("lists only itself and its descendants, on every base: no sibling, no parent, no token of theirs", async () => {
      for (const path of ["/keys", "/apikeys", `/customers/${acme.name}/keys`, `/tenants/${acme.name}/keys`, "/keys?limit=1000"]) {
        const res = await as(partner.keyId).get(path);
        expect(res.status, path).toBe(200);
        expect((res.body as Key[]).map((k) => k.id).sort(), path).toEqual([partner.id, friend.id].sort());
        for (const token of [acme.keys.customer, sibling.keyId, acme.keys.domain]) expect(res.text).not.toContain(token);
      }
      const domainList = await ok<Key[]>(as(partner.keyId).get(`/domains/${d()}/keys`));
      expect(domainList).toEqual([]);
      // The friend sees itself alone.
      expect((await ok<Key[]>(as(friend.keyId).get("/keys"))).map((k) => k.id)).toEqual([friend.id]);
    });

    it("gets 404 for a sibling and for its own maker, by id and by token", async () => {
      for (const ref of [sibling.id, sibling.keyId, rootKey.id, acme.keys.domain]) {
        await refused(as(partner.keyId).get(`/keys/${ref}`), 404, "not_found");
        await refused(as(partner.keyId).get(`/customers/${acme.name}/keys/${ref}`), 404, "not_found");
      }
      await refused(as(friend.keyId).get(`/keys/${partner.id}`), 404, "not_found");
      for (const sub of ["events", "credits", "usage"]) await refused(as(partner.keyId).get(`/keys/${sibling.id}/${sub}`), 404, "not_found");
    });

    it("cannot rename, disable, rotate, delete or set the policy or credits of a sibling", async () => {
      await refused(as(partner.keyId).put(`/keys/${sibling.id}`, { name: "taken-over" }), 404, "not_found");
      await refused(as(partner.keyId).put(`/keys/${sibling.id}`, { active: false }), 404, "not_found");
      await refused(as(partner.keyId).put(`/keys/${sibling.id}`, { policy: null }), 404, "not_found");
      await refused(as(partner.keyId).put(`/keys/${sibling.id}/credits`, { remaining: 5 }), 404, "not_found");
      await refused(as(partner.keyId).post(`/keys/${sibling.id}/rotate`, {}), 404, "not_found");
      // DELETE answers 204 for a key it cannot reach, as for one that does not exist, and deletes nothing.
      expect((await as(partner.keyId).delete(`/keys/${sibling.id}`)).status).toBe(204);
      expect((await as(partner.keyId).delete(`/keys/${rootKey.id}`)).status).toBe(204);
      const still = await ok(root.get(`/keys/${sibling.id}`));
      expect(still).toMatchObject({ name: "sibling", active: true, deletedAt: null });
      expect((await root.get("/keys/self")).status).toBe(200);
    });

    it("may not change its own policy or balance, nor its maker's through a key it made", async () => {
      await refused(as(partner.keyId).put("/keys/self", { policy: null }), 403, "forbidden");
      await refused(as(partner.keyId).put(`/keys/${partner.id}`, { policy: { leakPolicy: "notify" } }), 403, "forbidden");
      await refused(as(partner.keyId).put(`/keys/${partner.id}/credits`, { add: 100 }), 403, "forbidden");
      await refused(as(friend.keyId).put(`/keys/${partner.id}`, { policy: null }), 404, "not_found");
      await refused(as(friend.keyId).put(`/keys/${partner.id}/credits`, { remaining: 1000 }), 404, "not_found");
      await refused(as(friend.keyId).put("/keys/self", { policy: { credits: { remaining: 5 } } }), 403, "forbidden");
      expect((await ok(root.get(`/keys/${partner.id}`))).policy).toMatchObject({ restrictions: partnerPolicy.restrictions, ratelimits: partnerPolicy.ratelimits });
    });

    it("manages the keys it made: renames them, sets their policy (which loosens nothing), and deletes them", async () => {
      const made = await ok(as(partner.keyId).post("/keys", { name: "temp" }));
      expect((await ok(as(partner.keyId).put(`/keys/${made.id}`, { name: "temp2" }))).name).toBe("temp2");
      await ok(as(partner.keyId).put(`/keys/${made.id}`, { policy: { ratelimits: [{ name: "hourly", limit: 1000, windowSeconds: 3600 }] } }));
      expect(await verify(made.keyId)).toMatchObject({ code: "RATE_LIMITED" });
      expect((await as(partner.keyId).delete(`/keys/${made.id}`)).status).toBe(204);
      await refused(root.get(`/keys/${made.id}`), 404, "not_found");
    });

    it("gets 409 for a name another key holds, and itself or its own key for their names", async () => {
      await refused(as(partner.keyId).post("/keys", { name: "sibling" }), 409, "conflict");
      await refused(as(partner.keyId).post("/keys", { name: "root" }), 409, "conflict");
      await refused(as(friend.keyId).post("/keys", { name: "partner" }), 409, "conflict");
      expect((await ok(as(partner.keyId).post("/keys", { name: "partner" }))).id).toBe(partner.id);
      expect((await ok(as(partner.keyId).post("/keys", { name: "friend" }))).id).toBe(friend.id);
    });

    it("is refused every webhook path (403)", async () => {
      await refused(as(partner.keyId).get("/webhooks"), 403, "forbidden");
      await refused(as(partner.keyId).post("/webhooks", { url: "https://hooks.partner.example/k" }), 403, "forbidden");
      await refused(as(partner.keyId).get("/webhooks/1"), 403, "forbidden");
      await refused(as(partner.keyId).put("/webhooks/1", { active: false }), 403, "forbidden");
      await refused(as(partner.keyId).delete("/webhooks/1"), 403, "forbidden");
      await refused(as(friend.keyId).get("/webhooks/1/deliveries"), 403, "forbidden");
    });

    it("is refused every entity's policy and credits (403)", async () => {
      for (const path of [`/customers/${acme.name}/domains/${d()}`, `/domains/${d()}`, `/domains/${d()}/applications/ivr`, `/tenants/${acme.name}/domains/${d()}`]) {
        await refused(as(partner.keyId).get(`${path}/policy`), 403, "forbidden");
        await refused(as(partner.keyId).put(`${path}/policy`, null), 403, "forbidden");
        await refused(as(partner.keyId).get(`${path}/credits`), 403, "forbidden");
        await refused(as(partner.keyId).put(`${path}/credits`, { add: 10 }), 403, "forbidden");
      }
    });

    it("sees the events of itself and its descendants only", async () => {
      const events = await ok<Event[]>(as(partner.keyId).get("/events?limit=500"));
      expect(events.length).toBeGreaterThan(0);
      const own = new Set([partner.id, friend.id]);
      const seen = new Set(events.map((e) => e.key.id));
      for (const id of seen) expect(own.has(id) || id > friend.id, `event of key ${id}`).toBe(true);
      expect(seen.has(sibling.id)).toBe(false);
      expect(seen.has(rootKey.id)).toBe(false);
      const everyone = await ok<Event[]>(root.get("/events?limit=500"));
      expect(everyone.some((e) => e.key.id === sibling.id)).toBe(true);
      await refused(as(partner.keyId).get(`/keys/${sibling.id}/events`), 404, "not_found");
      expect((await ok<Event[]>(as(partner.keyId).get(`/keys/${friend.id}/events`))).length).toBeGreaterThan(0);
    });

    it("rotates itself: the new token keeps its maker, its policy binds it, and its friends stay its own", async () => {
      const rotated = await ok(as(partner.keyId).post("/keys/self/rotate", { gracePeriodSeconds: 60 }));
      expect(rotated.parentId).toBe(rootKey.id);
      const listed = (await ok<Key[]>(as(rotated.keyId).get("/keys"))).map((k) => k.id);
      expect(listed).toContain(friend.id);
      expect(listed).not.toContain(sibling.id);
      await refused(as(rotated.keyId).put(`/keys/${partner.id}`, { policy: null }), 403, "forbidden");
      await refused(as(rotated.keyId).get("/webhooks"), 403, "forbidden");
      // The friend is still bound by the partner's window (spent this hour), now named by the new key.
      const v = await verify(friend.keyId);
      expect(v).toMatchObject({ code: "RATE_LIMITED" });
      expect(v.ratelimits?.[0]).toMatchObject({ scope: "key", id: rotated.id });
    });
  });

  describe("unrestricted keys, as before", () => {
    it("list and manage every key of their scope, with tokens", async () => {
      const listed = await ok<Key[]>(root.get("/keys"));
      const byId = new Map(listed.map((k) => [k.id, k]));
      expect(byId.get(sibling.id)?.keyId).toBe(sibling.keyId);
      expect(byId.get(friend.id)?.keyId).toBe(friend.keyId);
      expect(byId.get(partner.id)?.keyId).toBe(partner.keyId);
    });

    it("make unrestricted children, which reach everything in their scope", async () => {
      const child = await ok(svc.as(sibling.keyId).post("/keys", { name: "sibling-child" }));
      expect(child.parentId).toBe(sibling.id);
      const listed = await ok<Key[]>(svc.as(child.keyId).get("/keys"));
      expect(listed.find((k) => k.id === rootKey.id)?.keyId).toBe(acme.keys.customer);
      expect((await ok(svc.as(child.keyId).get(`/keys/${sibling.id}`))).keyId).toBe(sibling.keyId);
      expect((await svc.as(child.keyId).get("/webhooks")).status).toBe(200);
      expect((await svc.as(child.keyId).get(`/domains/${d()}/policy`)).status).toBe(200);
      expect(await verify(child.keyId)).toMatchObject({ code: "VALID" });
      expect(await verify(child.keyId)).not.toHaveProperty("ratelimits");
    });

    it("provision by name idempotently", async () => {
      const first = await ok(root.post("/keys", { name: "twice" }));
      const again = await ok(root.post("/keys", { name: "twice" }));
      expect(again.id).toBe(first.id);
      expect((await ok(root.post("/keys", { name: "sibling" }))).id).toBe(sibling.id);
    });
  });
});
