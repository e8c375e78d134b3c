import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customerObject, domainObject, keyObject } from "../../src/http/schemas.ts";
import { CREDITS_CHANNEL } from "../../src/store/policy/policies.ts";
import { ok as expectOk, refused, type Answering } from "../support/answers.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Key policy as it is set and shown (docs/api.md, "Key policy"): a key's own, through POST and PUT on
// the key paths; an entity's, through /admin and the scope paths; and the policy's credits.
type Key = { id: number; keyId: string; name: string; policy: Record<string, unknown> | null; [k: string]: unknown };
type Event = { action: string; actor: Record<string, unknown>; changes: Record<string, [unknown, unknown]> };

const limits = { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1, methods: ["POST"], paths: ["/customers/*/calls/**"] }] };
const credits = (remaining: number, refill?: object) => ({ credits: { remaining, ...(refill && { refill }) } });
const restricted = { restrictions: { ips: ["203.0.113.0/24"], referrers: ["https://*.acme.example/*"], methods: ["GET"], paths: ["/customers/acme/**"] } };

describe.each(backends())("key policy over HTTP on %s", (backend) => {
  // 2026-02-10: a monthly refill on the 31st falls on February's last day.
  const time = fakeClock("2026-02-10T12:00:00.000Z");
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let root: ReturnType<TestService["as"]>;
  let rootId: number;
  const d = () => acme.domains[0];

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    root = svc.as(acme.keys.customer);
    rootId = (await root.get("/keys/self")).body.id as number;
  });
  afterAll(() => svc?.stop());

  const ok: <T = Key>(request: Answering, status?: number) => Promise<T> = expectOk;
  /** PUT of the JSON body `null` (remove the policy), as `token` or the admin. */
  const putNull = (path: string, token = svc.adminToken) =>
    supertest(svc.app).put(path).set("Authorization", `Bearer ${token}`).set("Content-Type", "application/json").send("null");
  const eventsOf = (id: number) => ok<Event[]>(root.get(`/keys/${id}/events`));

  describe("a key's own policy", () => {
    it("is set when the key is provisioned, shown in its shape, and recorded in its created event", async () => {
      const key = await ok(root.post(`/domains/${d()}/keys`, { name: "restricted", policy: restricted }));
      expect(keyObject.safeParse(key).error).toBeUndefined();
      expect(key.policy).toEqual(restricted);
      expect((await ok(root.get(`/keys/${key.id}`))).policy).toEqual(restricted);
      const listed = (await ok<Key[]>(root.get(`/domains/${d()}/keys`))).find((k) => k.id === key.id);
      expect(listed?.policy).toEqual(restricted);
      const [created] = await eventsOf(key.id);
      expect(created).toMatchObject({ action: "created", changes: { policy: [null, restricted] } });
    });

    it("is null in the shape of a key without one", async () => {
      const key = await ok(root.post("/keys", { name: "plain" }));
      expect(key.policy).toBeNull();
      expect((await eventsOf(key.id))[0]!.changes.policy).toBeUndefined();
    });

    it("stays as it is when provisioning returns an existing key", async () => {
      const first = await ok(root.post("/keys", { name: "idempotent", policy: limits }));
      const again = await ok(root.post("/keys", { name: "idempotent", policy: credits(5) }));
      expect(again.id).toBe(first.id);
      expect(again.policy).toEqual(limits);
      const none = await ok(root.post("/keys", { name: "idempotent" }));
      expect(none.policy).toEqual(limits);
    });

    it("is replaced whole by PUT, removed by null, each change an updated event with changes.policy", async () => {
      const key = await ok(root.post("/keys", { name: "replaced", policy: limits }));
      const replaced = await ok(root.put(`/keys/${key.id}`, { policy: restricted }));
      expect(replaced.policy).toEqual(restricted);
      const unchanged = await ok(root.put(`/keys/${key.id}`, { name: "renamed" }));
      expect(unchanged.policy).toEqual(restricted);
      const removed = await ok(root.put(`/keys/${key.id}`, { policy: null }));
      expect(removed.policy).toBeNull();
      const updates = (await eventsOf(key.id)).filter((e) => e.action === "updated");
      expect(updates.map((e) => e.changes.policy)).toEqual([[limits, restricted], undefined, [restricted, null]]);
      expect(updates[0]!.actor).toMatchObject({ type: "key", id: rootId });
    });

    it("records no policy change when the same policy is put again", async () => {
      const key = await ok(root.post("/keys", { name: "same", policy: restricted }));
      await ok(root.put(`/keys/${key.id}`, { policy: { ...restricted } }));
      expect((await eventsOf(key.id)).filter((e) => e.action === "updated")).toEqual([]);
    });

    it("is set on every key base by whoever may PUT the key", async () => {
      const app = await ok(root.post(`/customers/acme/domains/${d()}/applications/ivr/keys`, { name: "app-policy" }));
      const domainKey = svc.as(acme.keys.domain);
      expect((await ok(domainKey.put(`/domains/${d()}/applications/ivr/keys/${app.id}`, { policy: limits }))).policy).toEqual(limits);
      expect((await ok(svc.as(acme.keys.application).get(`/applications/self/keys/${app.id}`))).policy).toEqual(limits);
      expect((await ok(root.put(`/tenants/acme/domains/${d()}/applications/ivr/apikeys/${app.keyId}`, { policy: null }))).policy).toBeNull();
    });

    it("cannot be changed by the key itself: 403 forbidden, by any name for it, and nothing changes", async () => {
      const child = await ok(root.post(`/domains/${d()}/keys`, { name: "self-change", policy: limits }));
      const self = svc.as(child.keyId);
      for (const path of ["/keys/self", `/keys/${child.id}`, `/domains/${d()}/keys/${child.keyId}`, `/domains/self/keys/self`]) {
        await refused(self.put(path, { policy: null }), 403, "forbidden");
        await refused(self.put(path, { policy: credits(1_000_000) }), 403, "forbidden");
      }
      expect((await ok(self.put("/keys/self", { name: "self-renamed" }))).name).toBe("self-renamed");
      expect((await ok(root.get(`/keys/${child.id}`))).policy).toEqual(limits);
      expect((await eventsOf(child.id)).some((e) => e.changes.policy !== undefined && e.action === "updated")).toBe(false);
    });

    it("is 404 for a key outside the caller's scope, as for one that does not exist", async () => {
      const other = await ok(svc.as(globex.keys.customer).post("/keys", { name: "globex-key" }));
      const domainKey = svc.as(acme.keys.domain);
      const outside = await ok(root.post(`/domains/${acme.domains[1]}/keys`, { name: "other-domain" }));
      const a = await refused(root.put(`/keys/${other.id}`, { policy: limits }), 404, "not_found");
      const b = await refused(domainKey.put(`/keys/${outside.id}`, { policy: limits }), 404, "not_found");
      const c = await refused(root.put("/keys/999999", { policy: limits }), 404, "not_found");
      expect(new Set([a.message, b.message, c.message]).size).toBe(1);
      expect((await ok(svc.as(globex.keys.customer).get(`/keys/${other.id}`))).policy).toBeNull();
    });

    it("goes with the key through a rotation, with its balance, which the old key shares through its grace period", async () => {
      const key = await ok(root.post("/keys", { name: "rotating", policy: { ...limits, ...credits(50) } }));
      await ok(root.put(`/keys/${key.id}/credits`, { add: -8 }));
      const next = await ok(root.post(`/keys/${key.id}/rotate`, { gracePeriodSeconds: 3600 }));
      expect(next.policy).toEqual({ ...limits, ...credits(42) });
      expect(await ok(root.get(`/keys/${next.id}/credits`))).toEqual({ remaining: 42, nextRefillAt: null });
      // One balance for both tokens (docs/api.md, "Restricted keys"): spent by either, never doubled.
      expect(await ok(root.get(`/keys/${key.id}/credits`))).toEqual({ remaining: 42, nextRefillAt: null });
      await ok(root.put(`/keys/${key.id}/credits`, { add: -2 }));
      expect(await ok(root.get(`/keys/${next.id}/credits`))).toEqual({ remaining: 40, nextRefillAt: null });
      expect((await ok(root.get(`/keys/${key.id}`))).policy).toEqual({ ...limits, ...credits(40) });
    });
  });

  describe("an entity's policy", () => {
    it("is a customer's plan, set and read through /admin only, and shown in the customer's shape", async () => {
      const plan = { ...limits, ...credits(10_000, { amount: 10_000, interval: "monthly", day: 31 }) };
      expect(await ok(svc.admin.get("/admin/customers/globex/policy"))).toBeNull();
      expect(await ok(svc.admin.put("/admin/customers/globex/policy", plan))).toEqual(plan);
      expect(await ok(svc.admin.get("/admin/customers/globex/policy"))).toEqual(plan);
      const customer = await ok(svc.admin.get("/admin/customers/globex"));
      expect(customerObject.strict().safeParse(customer).error).toBeUndefined();
      expect(customer).toMatchObject({ policy: plan });
      expect((await ok<{ policy: unknown }[]>(svc.admin.get("/admin/customers"))).find((c) => c.policy !== null)).toMatchObject({ policy: plan });
      // Keys embed their customer, its policy with them.
      expect((await ok(svc.as(globex.keys.domain).get(`/keys/${(await ok(svc.as(globex.keys.domain).get("/keys/self"))).id}`))).tenant)
        .toMatchObject({ policy: plan });
      // No key sets a customer's policy, its own customer's key included.
      await refused(putNull("/customers/globex/policy", globex.keys.customer), 403, "forbidden");
      await refused(svc.as(globex.keys.customer).put("/customers/self/policy", {}), 403, "forbidden");
      expect(await ok(svc.as(globex.keys.customer).get("/customers/self/policy"))).toEqual(plan);
      expect(await ok(putNull("/admin/customers/globex/policy"))).toBeNull();
      expect((await ok(svc.admin.get("/admin/customers/globex"))).policy).toBeNull();
    });

    it("is set through /admin on domains, applications and subscribers, and shown in their shapes", async () => {
      const base = `/admin/customers/acme/domains/${d()}`;
      for (const path of [base, `${base}/applications/ivr`, `${base}/subscribers/${acme.subscriber.msisdn}`]) {
        expect(await ok(svc.admin.put(`${path}/policy`, limits))).toEqual(limits);
        expect((await ok(svc.admin.get(path))).policy).toEqual(limits);
        expect(await ok(putNull(`${path}/policy`))).toBeNull();
      }
      expect(domainObject.strict().safeParse(await ok(svc.admin.get(base))).error).toBeUndefined();
      await refused(svc.admin.put("/admin/customers/acme/domains/nowhere.example/policy", limits), 404, "not_found");
      await refused(svc.admin.get("/admin/customers/nobody/policy"), 404, "not_found");
    });

    it("is set on the scope paths by a key whose scope strictly contains the entity", async () => {
      const cases: [string, string, string][] = [
        ["a customer key, its domain", acme.keys.customer, `/customers/acme/domains/${d()}/policy`],
        ["a customer key, its domain without the customer", acme.keys.customer, `/domains/${d()}/policy`],
        ["a customer user's key, its domain", acme.keys.customerUser, `/domains/${d()}/policy`],
        ["a domain key, its application", acme.keys.domain, `/domains/self/applications/ivr/policy`],
        ["a domain key, its subscriber", acme.keys.domain, `/subscribers/${acme.subscriber.msisdn}/policy`],
        ["a domain user's key, its application", acme.keys.domainUser, `/applications/ivr/policy`],
        ["a customer key, an application by the tenants spelling", acme.keys.customer, `/tenants/acme/domains/${d()}/applications/ivr/policy`],
      ];
      for (const [what, token, path] of cases) {
        const res = await svc.as(token).put(path, credits(7));
        expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(200);
        expect(res.body, what).toEqual(credits(7));
        expect(await ok(svc.as(token).get(path)), what).toEqual(credits(7));
        expect(await ok(putNull(path, token))).toBeNull();
      }
    });

    it("is refused (403) to a key at the entity's own level, and read by it", async () => {
      await ok(svc.admin.put(`/admin/customers/acme/domains/${d()}/policy`, limits));
      const cases: [string, string, string][] = [
        ["a domain key, its own domain", acme.keys.domain, `/domains/self/policy`],
        ["a domain user's key, its own domain", acme.keys.domainUser, `/domains/${d()}/policy`],
        ["an application key, its own application", acme.keys.application, `/applications/self/policy`],
        ["a subscriber key, its own subscriber", acme.keys.subscriber, `/subscribers/self/policy`],
        ["a customer key, its own customer", acme.keys.customer, `/customers/acme/policy`],
      ];
      for (const [what, token, path] of cases) {
        const res = await svc.as(token).put(path, {});
        expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(403);
        expect(res.body, what).toMatchObject({ status: 403, error: "forbidden" });
        expect((await svc.as(token).put(path.replace(/policy$/, "credits"), { remaining: 1 })).status, what).toBe(403);
        expect((await svc.as(token).get(path)).status, what).toBe(200);
      }
      expect(await ok(svc.as(acme.keys.domain).get("/domains/self/policy"))).toEqual(limits);
      await ok(putNull(`/admin/customers/acme/domains/${d()}/policy`));
    });

    it("is out of reach (401) of a key whose scope does not reach the path", async () => {
      const cases: [string, string, string][] = [
        ["another customer's key", globex.keys.customer, `/domains/${d()}/policy`],
        ["a key of the other domain", acme.keys.otherDomain, `/domains/${d()}/applications/ivr/policy`],
        ["an application key, its domain", acme.keys.application, `/domains/${d()}/policy`],
        ["a domain key, under its customer's path", acme.keys.domain, `/customers/acme/domains/${d()}/policy`],
      ];
      for (const [what, token, path] of cases) {
        for (const res of [await svc.as(token).put(path, limits), await svc.as(token).get(path), await svc.as(token).get(path.replace(/policy$/, "credits"))]) {
          expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(401);
          expect(res.body).toMatchObject({ status: 401, error: "unauthorized" });
        }
      }
      expect(await ok(svc.admin.get(`/admin/customers/acme/domains/${d()}/policy`))).toBeNull();
    });

    it("needs a body: a PUT without one is 400, not an empty policy", async () => {
      await refused(root.put(`/domains/${d()}/policy`), 400, "bad_request");
      await refused(svc.admin.put("/admin/customers/acme/policy"), 400, "bad_request");
    });
  });

  describe("credits", () => {
    it("are a key's balance: read, set and added to, each change an updated event with changes.credits", async () => {
      const key = await ok(root.post("/keys", { name: "metered", policy: credits(100, { amount: 500, interval: "monthly", day: 31 }) }));
      expect(await ok(root.get(`/keys/${key.id}/credits`))).toEqual({ remaining: 100, nextRefillAt: "2026-02-28T00:00:00.000Z" });
      expect(await ok(root.put(`/keys/${key.id}/credits`, { add: 25 }))).toMatchObject({ remaining: 125 });
      expect(await ok(root.put(`/keys/${key.id}/credits`, { add: -1000 }))).toMatchObject({ remaining: 0 });
      expect(await ok(root.put(`/keys/${key.id}/credits`, { remaining: 40 }))).toMatchObject({ remaining: 40 });
      expect((await ok(root.get(`/keys/${key.id}`))).policy).toEqual(credits(40, { amount: 500, interval: "monthly", day: 31 }));
      const changes = (await eventsOf(key.id)).filter((e) => e.action === "updated").map((e) => e.changes);
      expect(changes).toEqual([{ credits: [100, 125] }, { credits: [125, 0] }, { credits: [0, 40] }]);
      // Adding nothing changes nothing, and records nothing.
      await ok(root.put(`/keys/${key.id}/credits`, { add: 0 }));
      expect((await eventsOf(key.id)).filter((e) => e.action === "updated")).toHaveLength(3);
    });

    it("are refilled when a refill is due: shown so at once, and added to from the refilled balance", async () => {
      const key = await ok(root.post("/keys", { name: "daily", policy: credits(10, { amount: 300, interval: "daily" }) }));
      await ok(root.put(`/keys/${key.id}/credits`, { add: -10 }));
      time.advance(86_400_000);
      try {
        expect(await ok(root.get(`/keys/${key.id}/credits`))).toEqual({ remaining: 300, nextRefillAt: "2026-02-12T00:00:00.000Z" });
        expect((await ok(root.get(`/keys/${key.id}`))).policy).toEqual(credits(300, { amount: 300, interval: "daily" }));
        expect(await ok(root.put(`/keys/${key.id}/credits`, { add: -1 }))).toMatchObject({ remaining: 299 });
        expect(await ok(root.get(`/keys/${key.id}/credits`))).toMatchObject({ remaining: 299 });
      } finally {
        time.advance(-86_400_000);
      }
    });

    it("start again from the policy's remaining when a policy is put, and go with credits removed from it", async () => {
      const key = await ok(root.post("/keys", { name: "reset", policy: credits(100) }));
      await ok(root.put(`/keys/${key.id}/credits`, { add: -60 }));
      expect((await ok(root.put(`/keys/${key.id}`, { policy: credits(100) }))).policy).toEqual(credits(100));
      expect(await ok(root.get(`/keys/${key.id}/credits`))).toMatchObject({ remaining: 100 });
      await ok(root.put(`/keys/${key.id}`, { policy: limits }));
      const gone = await refused(root.get(`/keys/${key.id}/credits`), 404, "not_found");
      expect(gone.message).toMatch(/no credits/);
      const updates = (await eventsOf(key.id)).filter((e) => e.action === "updated").map((e) => e.changes);
      expect(updates.at(-2)).toEqual({ credits: [40, 100] });
      expect(updates.at(-1)).toEqual({ policy: [credits(100), limits], credits: [100, null] });
    });

    it("are 404 with a clear message for a holder whose policy has none", async () => {
      const plain = await ok(root.post("/keys", { name: "no-credits" }));
      for (const res of [
        await root.get(`/keys/${plain.id}/credits`),
        await root.put(`/keys/${plain.id}/credits`, { add: 1 }),
        await svc.admin.get("/admin/customers/acme/credits"),
        await root.put(`/domains/${d()}/credits`, { remaining: 5 }),
      ]) {
        expect(res.status, JSON.stringify(res.body)).toBe(404);
        expect(res.body).toMatchObject({ error: "not_found", message: expect.stringMatching(/policy has no credits/) });
      }
    });

    it("of a key cannot be set or added to by the key itself (403), but can be read by it", async () => {
      const key = await ok(root.post(`/domains/${d()}/keys`, { name: "self-credits", policy: credits(3) }));
      const self = svc.as(key.keyId);
      await refused(self.put("/keys/self/credits", { add: 1000 }), 403, "forbidden");
      await refused(self.put(`/keys/${key.id}/credits`, { remaining: 1000 }), 403, "forbidden");
      await refused(self.put(`/domains/self/keys/self/credits`, { remaining: 1000 }), 403, "forbidden");
      expect(await ok(self.get("/keys/self/credits"))).toEqual({ remaining: 3, nextRefillAt: null });
      await refused(svc.as(globex.keys.customer).put(`/keys/${key.id}/credits`, { add: 1 }), 404, "not_found");
    });

    it("of an entity are set through /admin and the scope paths, and shown as its policy's remaining", async () => {
      await ok(svc.admin.put(`/admin/customers/acme/domains/${d()}/policy`, credits(1000)));
      expect(await ok(svc.admin.put(`/admin/customers/acme/domains/${d()}/credits`, { add: -100 }))).toEqual({ remaining: 900, nextRefillAt: null });
      expect(await ok(root.put(`/domains/${d()}/credits`, { add: -50 }))).toMatchObject({ remaining: 850 });
      expect(await ok(svc.as(acme.keys.domain).get("/domains/self/credits"))).toMatchObject({ remaining: 850 });
      expect(await ok(root.get(`/domains/${d()}/policy`))).toEqual(credits(850));
      expect((await ok(svc.admin.get(`/admin/customers/acme/domains/${d()}`))).policy).toEqual(credits(850));
      const self = await ok(svc.as(acme.keys.domain).get("/keys/self"));
      expect((await ok(svc.as(acme.keys.domain).get(`/keys/${self.id}`))).domain).toMatchObject({ policy: credits(850) });
      expect((await ok<Key[]>(root.get(`/domains/${d()}/keys`)))[0]!.domain).toMatchObject({ policy: credits(850) });
      await ok(svc.admin.put("/admin/customers/acme/credits", { remaining: 1 }), 404);
      await ok(putNull(`/admin/customers/acme/domains/${d()}/policy`));
    });

    it("announce every change of a balance on keyplane_credits, with its holder", async () => {
      const heard: string[] = [];
      const stop = await svc.database.db.listen({ [CREDITS_CHANNEL]: (holder) => heard.push(holder) });
      try {
        const key = await ok(root.post("/keys", { name: "announced", policy: credits(5) }));
        await ok(root.put(`/keys/${key.id}/credits`, { add: 1 }));
        await ok(root.put(`/keys/${key.id}/credits`, { remaining: 3 }));
        await ok(root.put(`/keys/${key.id}`, { policy: null }));
        await ok(svc.admin.put(`/admin/customers/acme/domains/${d()}/policy`, credits(9)));
        await ok(root.put(`/domains/${d()}/credits`, { add: -1 }));
        await ok(putNull(`/admin/customers/acme/domains/${d()}/policy`));
        const k = `key:${key.id}`;
        const domain = `domain:${acme.domainIds[0]}`;
        await expect.poll(() => heard).toEqual([k, k, k, domain, domain, domain]);
      } finally {
        await stop();
      }
    });

    it("added to by 50 at once come to the exact sum, and never below zero", async () => {
      const key = await ok(root.post("/keys", { name: "concurrent", policy: credits(1000) }));
      const adds = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? 7 : -3));
      const answers = await Promise.all(adds.map((add) => root.put(`/keys/${key.id}/credits`, { add })));
      expect(answers.map((a) => a.status)).toEqual(adds.map(() => 200));
      expect(await ok(root.get(`/keys/${key.id}/credits`))).toMatchObject({ remaining: 1000 + 25 * 7 - 25 * 3 });
      expect((await eventsOf(key.id)).filter((e) => e.action === "updated")).toHaveLength(50);

      await ok(svc.admin.put(`/admin/customers/acme/domains/${d()}/subscribers/${acme.subscriber.msisdn}/policy`, credits(30)));
      const takes = await Promise.all(Array.from({ length: 50 }, () => root.put(`/domains/${d()}/subscribers/${acme.subscriber.msisdn}/credits`, { add: -1 })));
      expect(takes.filter((t) => t.status !== 200).map((t) => JSON.stringify(t.body))).toEqual([]);
      const left = takes.map((t) => (t.body as { remaining: number }).remaining);
      expect(Math.min(...left)).toBe(0);
      expect(left.filter((n) => n > 0).sort((a, b) => b - a)).toEqual(Array.from({ length: 29 }, (_, i) => 29 - i));
      expect(await ok(svc.as(acme.keys.domain).get(`/subscribers/${acme.subscriber.msisdn}/credits`))).toMatchObject({ remaining: 0 });
    });
  });
});
