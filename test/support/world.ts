import { afterAll, beforeAll } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { ok } from "./answers.ts";
import type { FakeClock } from "./clock.ts";
import type { Backend } from "./databases.ts";
import { startPeer, startService, type TestService, type TestServiceOptions } from "./service.ts";

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

export interface TwoProcesses {
  svc: TestService;
  /** Another keyplane on the same database (startPeer), as a second replica would be. */
  peer: TestService;
  acme: Tenant;
  /** Requests as acme's customer key, to `svc`. */
  root: ReturnType<TestService["as"]>;
}

/**
 * Registers hooks that start, for the enclosing suite, two keyplanes on one database of `backend`, on
 * `clock`, with their background jobs out of the way (a test that needs the expiry sweep or the flush
 * of last use runs it by hand: they must not be what makes a key stop), and the tenant acme; and that
 * stop them. Returns a getter valid from the suite's own beforeAll on.
 */
export function useTwoProcesses(backend: Backend, clock: FakeClock): () => TwoProcesses {
  let world: Partial<Omit<TwoProcesses, "root">> = {};
  beforeAll(async () => {
    const jobs = { expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 };
    world.svc = await startService(backend, { clock: clock.clock, ...jobs });
    world.peer = await startPeer(world.svc, { clock: clock.clock, ...jobs });
    world.acme = await createTenant(world.svc, "acme");
  });
  afterAll(async () => {
    await world.peer?.stop();
    await world.svc?.stop();
    world = {};
  });
  return () => {
    const { svc, peer, acme } = world;
    if (!svc || !peer || !acme) throw new Error("the two processes are not up: did beforeAll fail?");
    return { svc, peer, acme, root: svc.as(acme.keys.customer) };
  };
}

export interface Served {
  svc: TestService;
  acme: Tenant;
  /** Where it listens, on a port of 127.0.0.1 of its own. */
  url: string;
}

/**
 * Registers hooks that start, for the enclosing suite, a keyplane on `backend` (with `options`) with
 * the tenant acme, listening on 127.0.0.1 as `keyplane serve` does (src/http/server.ts), for clients
 * that need a real socket; and that stop it. Returns a getter valid from the suite's own beforeAll on.
 */
export function useServed(backend: Backend, options: TestServiceOptions = {}): () => Served {
  let svc: TestService | undefined;
  let acme: Tenant | undefined;
  let server: Listening | undefined;
  beforeAll(async () => {
    svc = await startService(backend, options);
    server = await listen(svc.app, 0, "127.0.0.1");
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => {
    await server?.close(1_000);
    await svc?.stop();
  });
  return () => {
    if (!svc || !acme || !server) throw new Error("keyplane is not up: did beforeAll fail?");
    return { svc, acme, url: server.url };
  };
}
