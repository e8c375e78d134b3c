import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PathScopes } from "../../src/domain/scope/access.ts";
import { pathTargets } from "../../src/domain/scope/platform-path.ts";
import { applicationScope, customerScope, domainScope, subscriberScope, type Scope, type ScopeRefs } from "../../src/domain/scope/scope.ts";
import { resolvePathScope } from "../../src/services/directory/path-scope.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Path-scope resolution, the subtlest input to authorization, as a table: who calls, what the path
// names, and the scopes it resolves to (the gate the caller must reach, the target where the keys
// are), or nothing (401). Written from docs/api.md ("Paths and scopes"), not from the code.
describe.each(backends())("resolvePathScope on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  /** What a row writes as "@name": an entity's id or uuid, looked up once the directory exists. */
  const placeholders: Record<string, string> = {};

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    const a = svc.admin;
    const d1 = "/admin/customers/acme/domains/sip.acme.example";
    // Deleted entities, each still known by name, id and uuid to whoever saw them alive.
    await a.post("/admin/customers/acme/domains", { domain: "gone.acme.example" });
    const retired = (await a.post(`${d1}/applications`, { name: "retired" })).body;
    const lapsed = (await a.post(`${d1}/subscribers`, { msisdn: "12125550199" })).body;
    for (const path of ["/admin/customers/acme/domains/gone.acme.example", `${d1}/applications/retired`, `${d1}/subscribers/12125550199`]) {
      expect((await a.delete(path)).status).toBe(204);
    }
    const uuidOf = async (path: string) => (await a.get(path)).body.uuid as string;
    Object.assign(placeholders, {
      "@customer": String(acme.id),
      "@customerUuid": await uuidOf("/admin/customers/acme"),
      "@d1": String(acme.domainIds[0]),
      "@d1Uuid": await uuidOf(d1),
      "@otherDomain": String(globex.domainIds[0]),
      "@app": String(acme.application.id),
      "@appUuid": await uuidOf(`${d1}/applications/ivr`),
      "@sub": String(acme.subscriber.id),
      "@subUuid": await uuidOf(`${d1}/subscribers/${acme.subscriber.msisdn}`),
      "@otherApp": String(globex.application.id),
      "@retiredApp": String(retired.id),
      "@retiredAppUuid": retired.uuid,
      "@lapsedSub": String(lapsed.id),
    });
  });
  afterAll(async () => svc?.stop());

  type Row = [string, (w: World) => Scope, ScopeRefs, (w: World) => PathScopes | undefined];
  interface World {
    customer: Scope;
    d1: Scope;
    d2: Scope;
    app: Scope;
    sub: Scope;
    other: Scope;
    otherD1: Scope;
    otherApp: Scope;
  }
  const world = (): World => ({
    customer: customerScope(acme.id),
    d1: domainScope(acme.id, acme.domainIds[0]),
    d2: domainScope(acme.id, acme.domainIds[1]),
    app: applicationScope(acme.id, acme.domainIds[0], acme.application.id),
    sub: subscriberScope(acme.id, acme.domainIds[0], acme.subscriber.id),
    other: customerScope(globex.id),
    otherD1: domainScope(globex.id, globex.domainIds[0]),
    otherApp: applicationScope(globex.id, globex.domainIds[0], globex.application.id),
  });
  const both = (s: Scope) => ({ gate: s, target: s });
  const resolve = (refs: ScopeRefs, caller: Scope) => {
    const named = Object.fromEntries(Object.entries(refs).map(([k, v]) => [k, placeholders[v as string] ?? v]));
    return resolvePathScope(svc.ctx, named, caller);
  };

  const table: Row[] = [
    // customers
    ["a customer by name", (w) => w.customer, { customer: "acme" }, (w) => both(w.customer)],
    ["a customer by name in another letter case", (w) => w.customer, { customer: "ACME" }, (w) => both(w.customer)],
    ["a customer by id", (w) => w.customer, { customer: "@customer" }, (w) => both(w.customer)],
    ["a customer by uuid", (w) => w.customer, { customer: "@customerUuid" }, (w) => both(w.customer)],
    ["self as the customer, for a domain key", (w) => w.d1, { customer: "self" }, (w) => both(w.customer)],
    ["another customer (resolves; the gate refuses it later)", (w) => w.customer, { customer: "globex" }, (w) => both(w.other)],
    ["an unknown customer", (w) => w.customer, { customer: "initech" }, () => undefined],
    // domains
    ["a domain within its customer", (w) => w.customer, { customer: "acme", domain: "sip.acme.example" }, (w) => ({ gate: w.customer, target: w.d1 })],
    ["a domain by id within its customer", (w) => w.customer, { customer: "acme", domain: "@d1" }, (w) => ({ gate: w.customer, target: w.d1 })],
    ["a domain by uuid within its customer", (w) => w.customer, { customer: "acme", domain: "@d1Uuid" }, (w) => ({ gate: w.customer, target: w.d1 })],
    ["another customer's domain under this customer", (w) => w.customer, { customer: "acme", domain: "sip.globex.example" }, () => undefined],
    ["another customer's domain by id under this customer", (w) => w.customer, { customer: "acme", domain: "@otherDomain" }, () => undefined],
    ["another customer's domain by id alone (resolves; the gate refuses it later)", (w) => w.customer, { domain: "@otherDomain" }, (w) => both(w.otherD1)],
    ["a deleted domain", (w) => w.customer, { customer: "acme", domain: "gone.acme.example" }, () => undefined],
    ["an unknown domain", (w) => w.customer, { customer: "acme", domain: "nowhere.acme.example" }, () => undefined],
    ["a domain alone", (w) => w.customer, { domain: "media.acme.example" }, (w) => both(w.d2)],
    ["self as the domain, for a domain key", (w) => w.d1, { domain: "self" }, (w) => both(w.d1)],
    ["self as the domain, for a customer key (it has none)", (w) => w.customer, { domain: "self" }, () => undefined],
    // applications
    ["an application by name in its domain", (w) => w.customer, { domain: "sip.acme.example", application: "ivr" }, (w) => ({ gate: w.d1, target: w.app })],
    ["an application by name in its domain, in another letter case", (w) => w.customer, { domain: "sip.acme.example", application: "IVR" }, (w) => ({ gate: w.d1, target: w.app })],
    ["an application by name in another domain", (w) => w.customer, { domain: "media.acme.example", application: "ivr" }, () => undefined],
    ["an application by id under a domain it is not in", (w) => w.customer, { domain: "media.acme.example", application: "@app" }, () => undefined],
    ["an application by name without a domain: within the caller's", (w) => w.d1, { application: "ivr" }, (w) => both(w.app)],
    ["an application by name without a domain, for a caller in another domain", (w) => w.d2, { application: "ivr" }, () => undefined],
    ["an application by name without a domain, for a customer key (no domain to look in)", (w) => w.customer, { application: "ivr" }, () => undefined],
    ["an application by id without a domain", (w) => w.customer, { application: "@app" }, (w) => both(w.app)],
    ["an application by uuid without a domain", (w) => w.customer, { application: "@appUuid" }, (w) => both(w.app)],
    ["another customer's application by id (resolves; the gate refuses it later)", (w) => w.customer, { application: "@otherApp" }, (w) => both(w.otherApp)],
    ["an unknown application", (w) => w.customer, { domain: "sip.acme.example", application: "voicemail" }, () => undefined],
    ["a deleted application by name", (w) => w.customer, { domain: "sip.acme.example", application: "retired" }, () => undefined],
    ["a deleted application by id", (w) => w.customer, { application: "@retiredApp" }, () => undefined],
    ["a deleted application by uuid", (w) => w.customer, { application: "@retiredAppUuid" }, () => undefined],
    ["self as the application, for an application key", (w) => w.app, { application: "self" }, (w) => both(w.app)],
    ["self as the application, for a domain key", (w) => w.d1, { application: "self" }, () => undefined],
    // subscribers
    ["a subscriber by msisdn in its domain", (w) => w.customer, { customer: "acme", domain: "sip.acme.example", subscriber: "12125550100" }, (w) => ({ gate: w.customer, target: w.sub })],
    ["a subscriber by msisdn without a domain: within the caller's", (w) => w.d1, { subscriber: "12125550100" }, (w) => both(w.sub)],
    ["a subscriber by id", (w) => w.customer, { subscriber: "@sub" }, (w) => both(w.sub)],
    ["a subscriber by uuid", (w) => w.customer, { subscriber: "@subUuid" }, (w) => both(w.sub)],
    ["a subscriber by id under a domain it is not in", (w) => w.customer, { domain: "media.acme.example", subscriber: "@sub" }, () => undefined],
    ["a subscriber of another domain by msisdn", (w) => w.customer, { domain: "media.acme.example", subscriber: "12125550100" }, () => undefined],
    ["an unknown subscriber", (w) => w.customer, { domain: "sip.acme.example", subscriber: "12125550111" }, () => undefined],
    ["a deleted subscriber by msisdn", (w) => w.customer, { domain: "sip.acme.example", subscriber: "12125550199" }, () => undefined],
    ["a deleted subscriber by id", (w) => w.customer, { subscriber: "@lapsedSub" }, () => undefined],
    ["self as the subscriber, for a subscriber key", (w) => w.sub, { subscriber: "self" }, (w) => both(w.sub)],
    ["self as the subscriber, for an application key", (w) => w.app, { subscriber: "self" }, () => undefined],
  ];

  it.each(table)("%s", async (_what, caller, refs, expected) => {
    const w = world();
    expect(await resolve(refs, caller(w))).toEqual(expected(w));
  });

  // The aliases: `tenants` is another spelling of `customers` (docs/api.md, "Paths and scopes"); a path
  // under either names the same scope.
  it.each([
    ["/tenants/acme/keys", "/customers/acme/keys"],
    ["/tenants/acme/domains/sip.acme.example/applications/ivr/keys", "/customers/acme/domains/sip.acme.example/applications/ivr/keys"],
    ["/tenants/@customer/domains/@d1/subscribers/12125550100/apikeys", "/customers/@customer/domains/@d1/subscribers/12125550100/keys"],
  ])("%s names what %s names", async (alias, canonical) => {
    const refsOf = (path: string) => pathTargets(path)![0]!.refs;
    const caller = world().customer;
    const expected = await resolve(refsOf(canonical), caller);
    expect(expected).toBeDefined();
    expect(await resolve(refsOf(alias), caller)).toEqual(expected);
  });
});
