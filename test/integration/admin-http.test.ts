import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applicationObject, customerObject, domainObject, subscriberObject, userWithKeyObject } from "../../src/http/schemas.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";

// The admin API of docs/api.md ("Directory"), on each backend.
describe.each(backends())("admin API on %s", (backend) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(backend);
  });
  afterAll(() => svc.stop());

  const created = async (path: string, body: object, status = 201) => {
    const res = await svc.admin.post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    return res.body;
  };

  it("builds the directory, each object in its contract shape", async () => {
    const c = await created("/admin/customers", { name: "acme" });
    expect(customerObject.strict().parse(c)).toMatchObject({ name: "acme", active: true });
    const d = await created("/admin/customers/acme/domains", { domain: "SIP.Acme.Example" });
    expect(domainObject.strict().parse(d)).toMatchObject({ domain: "sip.acme.example", tenantId: c.id });
    const a = await created("/admin/customers/acme/domains/sip.acme.example/applications", { name: "ivr", url: "http://127.0.0.1:9/x" });
    expect(applicationObject.strict().parse(a)).toMatchObject({ name: "ivr", method: "POST", domainId: d.id, tenantId: c.id });
    const s = await created(`/admin/customers/${c.uuid}/domains/${d.id}/subscribers`, { msisdn: "+12125550100" });
    expect(subscriberObject.strict().parse(s)).toMatchObject({ msisdn: "+12125550100", domainId: d.id });
    const u = await created("/admin/customers/acme/users", { email: "Owner@Acme.Example" });
    expect(userWithKeyObject.parse(u)).toMatchObject({ email: "Owner@Acme.Example", domainId: null });
    expect(u.key).toMatchObject({ type: "user", name: "Owner@Acme.Example", userId: u.id, domainId: null, tenantId: c.id });
    const du = await created("/admin/customers/acme/users", { email: "ops@acme.example", domain: "sip.acme.example" });
    expect(du.key).toMatchObject({ type: "user", domainId: d.id, userId: du.id });

    for (const [path, expected] of [
      ["/admin/customers", [c]],
      ["/admin/customers/acme/domains", [d]],
      ["/admin/customers/acme/domains/sip.acme.example/applications", [a]],
      ["/admin/customers/acme/domains/sip.acme.example/subscribers", [s]],
      [`/admin/customers/${c.id}/users`, [{ ...u, key: undefined }, { ...du, key: undefined }].map(({ key: _k, ...rest }) => rest)],
      ["/admin/customers/ACME", c],
      [`/admin/customers/acme/domains/${d.uuid}`, d],
      ["/admin/customers/acme/domains/sip.acme.example/applications/IVR", a],
      [`/admin/customers/acme/domains/sip.acme.example/applications/${a.id}`, a],
      ["/admin/customers/acme/domains/sip.acme.example/subscribers/+12125550100", s],
      [`/admin/customers/acme/domains/sip.acme.example/subscribers/${s.uuid}`, s],
      ["/admin/customers/acme/users/owner@acme.example", { ...u, key: undefined }],
    ] as const) {
      const res = await svc.admin.get(path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).toEqual(JSON.parse(JSON.stringify(expected)));
    }
  });

  it("answers 409 for a duplicate within the parent, and 404 for an unknown parent or entity", async () => {
    await created("/admin/customers", { name: "dup" });
    await created("/admin/customers/dup/domains", { domain: "dup.example" });
    await created("/admin/customers/dup/domains/dup.example/applications", { name: "app" });
    await created("/admin/customers/dup/domains/dup.example/subscribers", { msisdn: "5550100" });
    await created("/admin/customers/dup/users", { email: "a@dup.example" });
    for (const [path, body] of [
      ["/admin/customers", { name: "DUP" }],
      ["/admin/customers/dup/domains", { domain: "dup.example" }],
      ["/admin/customers/acme/domains", { domain: "dup.example" }], // domains are unique service-wide
      ["/admin/customers/dup/domains/dup.example/applications", { name: "APP" }],
      ["/admin/customers/dup/domains/dup.example/subscribers", { msisdn: "5550100" }],
      ["/admin/customers/acme/users", { email: "A@dup.example" }], // emails too
    ] as const) {
      const res = await svc.admin.post(path, body);
      expect(res.status, path).toBe(409);
      expect(res.body).toMatchObject({ status: 409, error: "conflict" });
    }
    for (const path of [
      "/admin/customers/nobody", "/admin/customers/nobody/domains", "/admin/customers/dup/domains/nowhere.example",
      "/admin/customers/acme/domains/dup.example", // another customer's domain
      "/admin/customers/dup/domains/dup.example/applications/nothing", "/admin/customers/dup/domains/dup.example/subscribers/999999",
      "/admin/customers/dup/users/nobody@dup.example",
    ]) {
      const res = await svc.admin.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe("not_found");
    }
    expect((await svc.admin.post("/admin/customers/dup/users", { email: "b@dup.example", domain: "nowhere.example" })).status).toBe(404);
    expect((await svc.admin.delete("/admin/customers/nobody")).status).toBe(404);
  });

  it("refuses invalid names with 400", async () => {
    for (const [path, body] of [
      ["/admin/customers", { name: "self" }],
      ["/admin/customers", { name: "1234" }],
      ["/admin/customers", { name: "a b" }],
      ["/admin/customers", { name: "x".repeat(65) }],
      ["/admin/customers", {}],
      ["/admin/customers/acme/domains", { domain: "not a host" }],
      ["/admin/customers/acme/domains", { domain: "-bad.example" }],
      ["/admin/customers/acme/domains/sip.acme.example/applications", { name: "x", method: "PUT" }],
      ["/admin/customers/acme/domains/sip.acme.example/applications", { name: "x", url: "ftp://a/b" }],
      ["/admin/customers/acme/domains/sip.acme.example/subscribers", { msisdn: "12ab" }],
      ["/admin/customers/acme/users", { email: "not-an-email" }],
    ] as const) {
      const res = await svc.admin.post(path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.error).toBe("bad_request");
    }
  });

  it("deletes an entity with everything below it; its keys answer 401 at once", async () => {
    await created("/admin/customers", { name: "gone" });
    await created("/admin/customers/gone/domains", { domain: "a.gone.example" });
    await created("/admin/customers/gone/domains", { domain: "b.gone.example" });
    await created("/admin/customers/gone/domains/a.gone.example/applications", { name: "app" });
    const root = (await created("/admin/customers/gone/keys", { name: "root" }, 200)).keyId;
    const as = svc.as(root);
    const appKey = (await as.post("/customers/gone/domains/a.gone.example/applications/app/keys", { name: "k" })).body.keyId;
    const bKey = (await as.post("/customers/gone/domains/b.gone.example/keys", { name: "k" })).body.keyId;
    const user = await created("/admin/customers/gone/users", { email: "u@gone.example", domain: "a.gone.example" });
    // Warm the verification cache, then delete the domain: its keys stop at once, the sibling's do not.
    for (const t of [appKey, bKey, user.key.keyId]) expect((await svc.as(t).get("/keys/self")).status).toBe(200);
    expect((await svc.admin.delete("/admin/customers/gone/domains/a.gone.example")).status).toBe(204);
    expect((await svc.as(appKey).get("/keys/self")).status).toBe(401);
    expect((await svc.as(user.key.keyId).get("/keys/self")).status).toBe(401);
    expect((await svc.as(bKey).get("/keys/self")).status).toBe(200);
    expect((await svc.admin.get("/admin/customers/gone/domains/a.gone.example/applications/app")).status).toBe(404);
    expect((await svc.admin.get("/admin/customers/gone/users/u@gone.example")).status).toBe(404);
    // The name is free again.
    await created("/admin/customers/gone/domains", { domain: "a.gone.example" });
    expect((await svc.admin.delete("/admin/customers/gone")).status).toBe(204);
    expect((await as.get("/keys/self")).status).toBe(401);
    expect((await svc.as(bKey).get("/keys/self")).status).toBe(401);
    expect((await svc.admin.get("/admin/customers/gone")).status).toBe(404);
  });

  it("deletes a user with its key", async () => {
    await created("/admin/customers", { name: "staff" });
    const u = await created("/admin/customers/staff/users", { email: "temp@staff.example" });
    expect((await svc.as(u.key.keyId).get("/keys/self")).status).toBe(200);
    expect((await svc.admin.delete(`/admin/customers/staff/users/${u.id}`)).status).toBe(204);
    expect((await svc.as(u.key.keyId).get("/keys/self")).status).toBe(401);
  });

  it("provisions the bootstrap customer key idempotently", async () => {
    await created("/admin/customers", { name: "boot" });
    const first = await created("/admin/customers/boot/keys", { name: "root" }, 200);
    expect(await created("/admin/customers/boot/keys", { name: "root", active: false }, 200)).toEqual(first);
    expect(first).toMatchObject({ type: "customer", domainId: null, active: true });
  });

  it("keeps the admin token and API keys apart", async () => {
    await created("/admin/customers", { name: "apart" });
    const key = (await created("/admin/customers/apart/keys", { name: "root" }, 200)).keyId;
    for (const res of [
      await svc.as(key).get("/admin/customers"),
      await svc.as(key).post("/admin/customers", { name: "evil" }),
      await svc.as(svc.adminToken).get("/keys/self"),
      await svc.as(svc.adminToken).get("/customers/apart/keys"),
      await svc.as("x".repeat(40)).get("/admin/customers"),
      await svc.as("").get("/admin/customers").unset("Authorization"),
    ]) {
      expect(res.status).toBe(401);
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="keyplane"');
      expect(res.body.error).toBe("unauthorized");
    }
    expect((await svc.admin.get("/admin/customers/evil")).status).toBe(404);
  });
});
