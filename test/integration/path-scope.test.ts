import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applicationScope, customerScope, domainScope, subscriberScope, type Scope, type ScopeRefs } from "../../src/domain/scope.ts";
import { resolvePathScope } from "../../src/services/path-scope.ts";
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
  let acmeUuid: string;
  let deletedDomain: string;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    acmeUuid = (await svc.admin.get("/admin/customers/acme")).body.uuid;
    deletedDomain = "gone.acme.example";
    await svc.admin.post("/admin/customers/acme/domains", { domain: deletedDomain });
    await svc.admin.delete(`/admin/customers/acme/domains/${deletedDomain}`);
  });
  afterAll(async () => svc?.stop());

  type Row = [string, (w: World) => Scope, ScopeRefs, (w: World) => { gate: Scope; target: Scope } | undefined];
  interface World {
    customer: Scope;
    d1: Scope;
    d2: Scope;
    app: Scope;
    sub: Scope;
    other: Scope;
    otherApp: Scope;
    ids: { customer: number; d1: number; app: number; sub: number; otherApp: number };
    uuid: string;
  }
  const both = (s: Scope) => ({ gate: s, target: s });

  const table: Row[] = [
    ["a customer by name", (w) => w.customer, { customer: "acme" }, (w) => both(w.customer)],
    ["a customer by name in another letter case", (w) => w.customer, { customer: "ACME" }, (w) => both(w.customer)],
    ["a customer by id", (w) => w.customer, { customer: "@customer" }, (w) => both(w.customer)],
    ["a customer by uuid", (w) => w.customer, { customer: "@uuid" }, (w) => both(w.customer)],
    ["self as the customer, for a domain key", (w) => w.d1, { customer: "self" }, (w) => both(w.customer)],
    ["another customer (resolves; the gate refuses it later)", (w) => w.customer, { customer: "globex" }, (w) => both(w.other)],
    ["an unknown customer", (w) => w.customer, { customer: "initech" }, () => undefined],
    ["a domain within its customer", (w) => w.customer, { customer: "acme", domain: "sip.acme.example" }, (w) => ({ gate: w.customer, target: w.d1 })],
    ["another customer's domain under this customer", (w) => w.customer, { customer: "acme", domain: "sip.globex.example" }, () => undefined],
    ["a deleted domain", (w) => w.customer, { customer: "acme", domain: "gone.acme.example" }, () => undefined],
    ["a domain alone", (w) => w.customer, { domain: "media.acme.example" }, (w) => both(w.d2)],
    ["self as the domain, for a domain key", (w) => w.d1, { domain: "self" }, (w) => both(w.d1)],
    ["self as the domain, for a customer key (it has none)", (w) => w.customer, { domain: "self" }, () => undefined],
    ["an application by name in its domain", (w) => w.customer, { domain: "sip.acme.example", application: "ivr" }, (w) => ({ gate: w.d1, target: w.app })],
    ["an application by name in another domain", (w) => w.customer, { domain: "media.acme.example", application: "ivr" }, () => undefined],
    ["an application by name without a domain: within the caller's", (w) => w.d1, { application: "ivr" }, (w) => both(w.app)],
    ["an application by name without a domain, for a caller in another domain", (w) => w.d2, { application: "ivr" }, () => undefined],
    ["an application by name without a domain, for a customer key (no domain to look in)", (w) => w.customer, { application: "ivr" }, () => undefined],
    ["an application by id without a domain", (w) => w.customer, { application: "@app" }, (w) => both(w.app)],
    ["another customer's application by id (resolves; the gate refuses it later)", (w) => w.customer, { application: "@otherApp" }, (w) => both(w.otherApp)],
    ["self as the application, for an application key", (w) => w.app, { application: "self" }, (w) => both(w.app)],
    ["self as the application, for a domain key", (w) => w.d1, { application: "self" }, () => undefined],
    ["a subscriber by msisdn in its domain", (w) => w.customer, { customer: "acme", domain: "sip.acme.example", subscriber: "12125550100" }, (w) => ({ gate: w.customer, target: w.sub })],
    ["a subscriber by msisdn without a domain: within the caller's", (w) => w.d1, { subscriber: "12125550100" }, (w) => both(w.sub)],
    ["a subscriber by id", (w) => w.customer, { subscriber: "@sub" }, (w) => both(w.sub)],
    ["self as the subscriber, for a subscriber key", (w) => w.sub, { subscriber: "self" }, (w) => both(w.sub)],
    ["self as the subscriber, for an application key", (w) => w.app, { subscriber: "self" }, () => undefined],
    ["a subscriber of another domain by msisdn", (w) => w.customer, { domain: "media.acme.example", subscriber: "12125550100" }, () => undefined],
  ];

  it.each(table)("%s", async (_what, caller, refs, expected) => {
    const w: World = {
      customer: customerScope(acme.id),
      d1: domainScope(acme.id, acme.domainIds[0]),
      d2: domainScope(acme.id, acme.domainIds[1]),
      app: applicationScope(acme.id, acme.domainIds[0], acme.application.id),
      sub: subscriberScope(acme.id, acme.domainIds[0], acme.subscriber.id),
      other: customerScope(globex.id),
      otherApp: applicationScope(globex.id, globex.domainIds[0], globex.application.id),
      ids: { customer: acme.id, d1: acme.domainIds[0], app: acme.application.id, sub: acme.subscriber.id, otherApp: globex.application.id },
      uuid: acmeUuid,
    };
    const placeholders: Record<string, string> = {
      "@customer": String(w.ids.customer), "@uuid": w.uuid, "@app": String(w.ids.app), "@sub": String(w.ids.sub), "@otherApp": String(w.ids.otherApp),
    };
    const named = Object.fromEntries(Object.entries(refs).map(([k, v]) => [k, placeholders[v as string] ?? v]));
    expect(await resolvePathScope(svc.ctx, named, caller(w))).toEqual(expected(w));
  });
});
