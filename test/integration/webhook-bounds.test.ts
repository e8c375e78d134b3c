import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WEBHOOKS_PER_SCOPE } from "../../src/domain/webhooks/webhook.ts";
import { webhookInsert, webhookNextId } from "../../src/store/webhooks/webhooks.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// What one scope can hold (docs/webhooks.md, "Webhooks"): at most 25 webhooks, the 26th 409, on the key
// paths and the admin's alike, however many are asked for at once; and the lists paged as keys are.
interface Webhook { id: number }

describe.each(backends())("webhook bounds on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let initech: Tenant;

  beforeAll(async () => {
    svc = await startService(backend, { webhooks: { allowHttp: false, allowPrivate: true } });
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    initech = await createTenant(svc, "initech");
  });
  afterAll(async () => svc?.stop());

  const url = (n: number | string) => `https://hooks.example/${n}`;
  const ids = (body: unknown) => (body as Webhook[]).map((w) => w.id);
  const removeAll = async (token: string) => {
    for (const id of ids((await svc.as(token).get("/webhooks")).body)) await svc.as(token).delete(`/webhooks/${id}`);
  };

  it("refuses a key's 26th webhook at its scope with 409, and takes one again once one is deleted", async () => {
    const made: number[] = [];
    for (let i = 0; i < WEBHOOKS_PER_SCOPE; i++) {
      const res = await svc.as(acme.keys.domain).post("/webhooks", { url: url(i) });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      made.push((res.body as Webhook).id);
    }
    const refused = await svc.as(acme.keys.domain).post("/webhooks", { url: url("one-more") });
    expect(refused.status).toBe(409);
    expect(refused.headers["content-type"]).toMatch(/^application\/json/);
    expect(refused.body).toEqual({ status: 409, error: "conflict", message: expect.stringContaining("25 webhooks") });
    expect(ids((await svc.as(acme.keys.domain).get("/webhooks")).body)).toHaveLength(WEBHOOKS_PER_SCOPE);

    // Other scopes have room of their own: the customer's above it, the other domain beside it.
    expect((await svc.as(acme.keys.customer).post("/webhooks", { url: url("customer") })).status).toBe(201);
    expect((await svc.as(acme.keys.otherDomain).post("/webhooks", { url: url("other") })).status).toBe(201);
    expect((await svc.admin.post("/admin/webhooks", { url: url("admin"), scope: { customer: "acme", domain: acme.domains[0] } })).status).toBe(409);

    expect((await svc.as(acme.keys.domain).delete(`/webhooks/${made[0]}`)).status).toBe(204);
    expect((await svc.as(acme.keys.domain).post("/webhooks", { url: url("again") })).status).toBe(201);
    expect((await svc.as(acme.keys.domain).post("/webhooks", { url: url("again-2") })).status).toBe(409);
    await removeAll(acme.keys.customer);
  });

  it("refuses the admin's 26th webhook at a scope, and at no scope (every key's), with 409", async () => {
    const made: number[] = [];
    for (const scope of [{ customer: "globex", domain: globex.domains[1] }, undefined]) {
      for (let i = 0; i < WEBHOOKS_PER_SCOPE; i++) {
        const res = await svc.admin.post("/admin/webhooks", { url: url(i), ...(scope && { scope }) });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        made.push((res.body as Webhook).id);
      }
      const refused = await svc.admin.post("/admin/webhooks", { url: url("one-more"), ...(scope && { scope }) });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ status: 409, error: "conflict" });
    }
    // The key paths count the same scope.
    expect((await svc.as(globex.keys.otherDomain).post("/webhooks", { url: url("key") })).status).toBe(409);
    for (const id of made) expect((await svc.admin.delete(`/admin/webhooks/${id}`)).status).toBe(204);
  });

  it("never lets concurrent creates make more than 25 in a scope", async () => {
    for (let i = 0; i < WEBHOOKS_PER_SCOPE - 1; i++) expect((await svc.as(initech.keys.domain).post("/webhooks", { url: url(i) })).status).toBe(201);
    // At 24, two at once: one is made.
    const pair = await Promise.all([0, 1].map((i) => svc.as(initech.keys.domain).post("/webhooks", { url: url(`pair-${i}`) })));
    expect(pair.map((r) => r.status).sort()).toEqual([201, 409]);
    await removeAll(initech.keys.domain);

    // From none, forty at once, through the key path and the admin's.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => i % 2
      ? svc.as(initech.keys.domain).post("/webhooks", { url: url(`burst-${i}`) })
      : svc.admin.post("/admin/webhooks", { url: url(`burst-${i}`), scope: { customer: "initech", domain: initech.domains[0] } })));
    expect(burst.filter((r) => r.status === 201)).toHaveLength(WEBHOOKS_PER_SCOPE);
    expect(burst.filter((r) => r.status === 409)).toHaveLength(40 - WEBHOOKS_PER_SCOPE);
    expect(ids((await svc.as(initech.keys.domain).get("/webhooks")).body)).toHaveLength(WEBHOOKS_PER_SCOPE);
    await removeAll(initech.keys.domain);
  });

  it("leaves a scope that held more before the bound all of them, and makes it no more", async () => {
    const scope = { tenantId: initech.id, domainId: initech.domainIds[1], applicationId: null, subscriberId: null };
    for (let i = 0; i < WEBHOOKS_PER_SCOPE + 5; i++) {
      const id = await webhookNextId(svc.database.db);
      await webhookInsert(svc.database.db, id, { scope, url: url(`old-${i}`), events: ["key.created"], description: null }, Buffer.alloc(40), new Date(), 1_000);
    }
    expect(ids((await svc.as(initech.keys.otherDomain).get("/webhooks")).body)).toHaveLength(WEBHOOKS_PER_SCOPE + 5);
    expect((await svc.as(initech.keys.otherDomain).post("/webhooks", { url: url("new") })).status).toBe(409);
    await removeAll(initech.keys.otherDomain);
  });

  describe("lists, paged as keys are", () => {
    it("pages a key's list with limit and after, with Link rel=next while more remain", async () => {
      for (let i = 0; i < 5; i++) expect((await svc.as(acme.keys.application).post("/webhooks", { url: url(`page-${i}`) })).status).toBe(201);
      const all = ids((await svc.as(acme.keys.application).get("/webhooks")).body);
      expect(all).toHaveLength(5);

      const seen: number[] = [];
      let path: string | undefined = "/webhooks?limit=2";
      let pages = 0;
      while (path) {
        const res = await svc.as(acme.keys.application).get(path);
        expect(res.status).toBe(200);
        seen.push(...ids(res.body));
        pages++;
        const link = res.headers.link as string | undefined;
        path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
        if (path) expect(path).toMatch(/^\/webhooks\?limit=2&after=\d+$/);
      }
      expect(seen).toEqual(all);
      expect(pages).toBe(3);

      const exact = await svc.as(acme.keys.application).get("/webhooks?limit=5");
      expect(ids(exact.body)).toEqual(all);
      expect(exact.headers.link).toBeUndefined();
      expect(ids((await svc.as(acme.keys.application).get(`/webhooks?after=${all[2]}`)).body)).toEqual(all.slice(3));
      await removeAll(acme.keys.application);
    });

    it("pages the admin's list too", async () => {
      const made = [];
      for (let i = 0; i < 3; i++) made.push(((await svc.admin.post("/admin/webhooks", { url: url(`admin-page-${i}`) })).body as Webhook).id);
      const first = await svc.admin.get("/admin/webhooks?limit=1");
      expect(ids(first.body)).toHaveLength(1);
      expect(first.headers.link).toMatch(/^<\/admin\/webhooks\?limit=1&after=\d+>; rel="next"$/);
      const rest = await svc.admin.get(`/admin/webhooks?after=${ids(first.body)[0]}`);
      expect([...ids(first.body), ...ids(rest.body)]).toEqual(ids((await svc.admin.get("/admin/webhooks")).body));
      for (const id of made) await svc.admin.delete(`/admin/webhooks/${id}`);
    });

    it.each([["limit=0"], ["limit=1001"], ["limit=ten"], ["after=-1"], ["after=x"]])("answers %s with 400 and the JSON error body", async (query) => {
      for (const res of [await svc.as(acme.keys.customer).get(`/webhooks?${query}`), await svc.admin.get(`/admin/webhooks?${query}`)]) {
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ status: 400, error: "bad_request" });
      }
    });
  });
});
