import { expect } from "vitest";
import type { TestService } from "./service.ts";

// The directory the isolation matrix and most HTTP suites work in: two customers, each with two
// domains; in the first domain of each an application and a subscriber; a customer-level and a
// domain-level user; and a key at every level.
export interface Tenant {
  name: string;
  id: number;
  domains: [string, string];
  domainIds: [number, number];
  application: { name: string; id: number };
  subscriber: { msisdn: string; id: number };
  keys: {
    customer: string;
    domain: string;
    otherDomain: string;
    application: string;
    subscriber: string;
    customerUser: string;
    domainUser: string;
  };
}

async function ok<T>(request: PromiseLike<{ status: number; body: T }>, status: number): Promise<T> {
  const res = await request;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}

export async function createTenant(svc: TestService, name: string): Promise<Tenant> {
  const a = svc.admin;
  const customer = await ok<{ id: number }>(a.post("/admin/customers", { name }), 201);
  const d1 = `sip.${name}.example`;
  const d2 = `media.${name}.example`;
  const dom1 = await ok<{ id: number }>(a.post(`/admin/customers/${name}/domains`, { domain: d1 }), 201);
  const dom2 = await ok<{ id: number }>(a.post(`/admin/customers/${name}/domains`, { domain: d2 }), 201);
  const app = await ok<{ id: number }>(a.post(`/admin/customers/${name}/domains/${d1}/applications`, { name: "ivr" }), 201);
  const msisdn = name === "acme" ? "12125550100" : "442071230000";
  const sub = await ok<{ id: number }>(a.post(`/admin/customers/${name}/domains/${d1}/subscribers`, { msisdn }), 201);
  const key = async (path: string) => (await ok<{ keyId: string }>(svc.as(customerKey).post(path, { name: "k" }), 200)).keyId;
  const customerKey = (await ok<{ keyId: string }>(a.post(`/admin/customers/${name}/keys`, { name: "root" }), 200)).keyId;
  const cu = await ok<{ key: { keyId: string } }>(a.post(`/admin/customers/${name}/users`, { email: `owner@${name}.example` }), 201);
  const du = await ok<{ key: { keyId: string } }>(a.post(`/admin/customers/${name}/users`, { email: `ops@${name}.example`, domain: d1 }), 201);
  return {
    name,
    id: customer.id,
    domains: [d1, d2],
    domainIds: [dom1.id, dom2.id],
    application: { name: "ivr", id: app.id },
    subscriber: { msisdn, id: sub.id },
    keys: {
      customer: customerKey,
      domain: await key(`/customers/${name}/domains/${d1}/keys`),
      otherDomain: await key(`/customers/${name}/domains/${d2}/keys`),
      application: await key(`/customers/${name}/domains/${d1}/applications/ivr/keys`),
      subscriber: await key(`/customers/${name}/domains/${d1}/subscribers/${msisdn}/keys`),
      customerUser: cu.key.keyId,
      domainUser: du.key.keyId,
    },
  };
}
