// The operator's port onto the key store, on each database backend: scopes named by an ApiKey, and the
// claims on keys (managed_by) that make KeyConflict and adoption safe under races.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scope } from "../../src/domain/scope/scope.ts";
import { keyStoreFor, type KeyStore } from "../../src/operator/reconcile/keystore.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";

describe.each(backends())("operator key store on %s", (backend) => {
  let svc: TestService;
  let store: KeyStore;
  let acme: { id: number; uuid: string };
  let domain: Scope;

  beforeAll(async () => {
    svc = await startService(backend);
    store = keyStoreFor(svc.ctx);
    acme = (await svc.admin.post("/admin/customers", { name: "acme" })).body as { id: number; uuid: string };
    await svc.admin.post("/admin/customers", { name: "globex" });
    const d = (await svc.admin.post("/admin/customers/acme/domains", { domain: "sip.acme.example" })).body as { id: number };
    await svc.admin.post("/admin/customers/globex/domains", { domain: "sip.globex.example" });
    await svc.admin.post("/admin/customers/acme/domains/sip.acme.example/applications", { name: "ivr" });
    await svc.admin.post("/admin/customers/acme/domains/sip.acme.example/subscribers", { msisdn: "12125550100" });
    domain = { tenantId: acme.id, domainId: d.id, applicationId: null, subscriberId: null };
  });
  afterAll(() => svc?.stop());

  describe("resolveScope", () => {
    it.each([
      ["a customer by name, case-insensitively", { customer: "ACME" }, { domainId: null }],
      ["a domain within its customer", { customer: "acme", domain: "sip.acme.example" }, { applicationId: null }],
      ["an application by name within its domain", { customer: "acme", domain: "sip.acme.example", application: "ivr" }, { subscriberId: null }],
      ["a subscriber by msisdn within its domain", { customer: "acme", domain: "sip.acme.example", subscriber: "12125550100" }, { applicationId: null }],
    ])("finds %s", async (_what, refs, part) => {
      const found = await store.resolveScope(refs);
      expect(found).toMatchObject({ found: true, scope: { tenantId: acme.id, ...part } });
    });

    it("finds a customer by id and by uuid", async () => {
      expect(await store.resolveScope({ customer: String(acme.id) })).toMatchObject({ found: true, scope: { tenantId: acme.id } });
      expect(await store.resolveScope({ customer: acme.uuid })).toMatchObject({ found: true, scope: { tenantId: acme.id } });
    });

    it.each([
      ["an unknown customer", { customer: "initech" }, "customer"],
      ["`self`, which names nothing without a caller", { customer: "self" }, "customer"],
      ["another customer's domain", { customer: "acme", domain: "sip.globex.example" }, "domain"],
      ["an unknown application", { customer: "acme", domain: "sip.acme.example", application: "voicemail" }, "application"],
      ["an unknown subscriber", { customer: "acme", domain: "sip.acme.example", subscriber: "999" }, "subscriber"],
    ])("names what is missing for %s", async (_what, refs, missing) => {
      expect(await store.resolveScope(refs)).toMatchObject({ found: false, missing });
    });
  });

  describe("findCustomer: a customer's every name, for a namespace's keyplane.dev/customers", () => {
    it("finds a customer by name without letter case, by id and by uuid", async () => {
      const names = { id: acme.id, uuid: acme.uuid, name: "acme" };
      for (const ref of ["acme", "ACME", String(acme.id), acme.uuid, acme.uuid.toUpperCase()]) expect(await store.findCustomer(ref)).toEqual(names);
    });

    it.each(["initech", "self", "999999", "0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10", "acme\u0000"])("finds none for %j", async (ref) => {
      expect(await store.findCustomer(ref)).toBeUndefined();
    });
  });

  it("provisions idempotently by scope and name, recording the ApiKey that manages the key", async () => {
    await store.provision(domain, "billing", false, "team-a/billing");
    await store.provision(domain, "billing", true, "team-b/other");
    const key = await store.findKey(domain, "billing");
    expect(key).toMatchObject({ name: "billing", active: false, type: "customer", managedBy: "team-a/billing", scope: domain });
    expect(key?.token).toMatch(/^XI[0-9A-F]{32}$/);
    expect((await store.listManaged("team-a/billing")).map((k) => k.id)).toEqual([key?.id]);
    expect(await store.listManaged("team-b/other")).toEqual([]);
  });

  it("lets exactly one of many racing ApiKeys claim a key made through REST, and its owner claim it again", async () => {
    const made = (await svc.admin.post("/admin/customers/acme/keys", { name: "contested" })).body as { id: number };
    const owners = Array.from({ length: 10 }, (_, i) => `ns/claimant-${i}`);
    const won = await Promise.all(owners.map((owner) => store.claim(made.id, owner)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = owners[won.indexOf(true)] ?? "";
    expect(await store.claim(made.id, winner)).toBe(true);
    expect((await store.listManaged(winner)).map((k) => k.id)).toEqual([made.id]);
  });

  it("releases a claim only for its owner; the key stays", async () => {
    await store.provision(domain, "retained", true, "team-a/retained");
    const key = await store.findKey(domain, "retained");
    await store.release(key!.id, "team-b/intruder");
    expect((await store.findKey(domain, "retained"))?.managedBy).toBe("team-a/retained");
    await store.release(key!.id, "team-a/retained");
    expect(await store.findKey(domain, "retained")).toMatchObject({ id: key?.id, managedBy: null });
    expect(await store.listManaged("team-a/retained")).toEqual([]);
  });

  it("renames, (de)activates and deletes a key; a deleted key is managed no more", async () => {
    await store.provision(domain, "old-name", true, "team-a/changing");
    const key = (await store.findKey(domain, "old-name"))!;
    await store.update(key, { name: "new-name", active: false }, "team-a/changing");
    expect(await store.findKey(domain, "new-name")).toMatchObject({ id: key.id, active: false, token: key.token });
    await store.delete(key, "team-a/changing");
    expect(await store.findKey(domain, "new-name")).toBeUndefined();
    expect(await store.listManaged("team-a/changing")).toEqual([]);
  });
});
