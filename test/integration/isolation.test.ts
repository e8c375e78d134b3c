// The isolation matrix (docs/api.md, "Keys" and "Errors"): two customers built alike (test/support/world.ts); every key
// of both calls every key path of both, with every method. The expected answer of each call comes from
// `mayCall` below, a plain restatement of the contract's "who may call it" table over this small world,
// never from the code under test. Calls that must be refused are then shown to have changed nothing:
// the key they aimed at still authenticates, with its name and its active state.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { backends } from "../support/databases.ts";
import { expectCleanLabels, namesOf } from "../support/metric-labels.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

type Who = "A" | "B";
type Leaf = "application" | "subscriber";

/** Where a key lies, or what a path names: a customer, one of its two domains, and in the first the application or the subscriber. */
interface Place {
  tenant: Who;
  domain: 0 | 1 | null;
  leaf: Leaf | null;
}
const at = (tenant: Who, domain: 0 | 1 | null = null, leaf: Leaf | null = null): Place => ({ tenant, domain, leaf });
const other = (t: Who): Who => (t === "A" ? "B" : "A");
const showPlace = (p: Place) => [p.tenant, p.domain === null ? "" : `d${p.domain}`, p.leaf ?? ""].filter(Boolean).join(".");

type CallerName = keyof Tenant["keys"];
const CALLERS: Record<CallerName, (t: Who) => Place> = {
  customer: (t) => at(t),
  customerUser: (t) => at(t), // a user key has its user's level
  domain: (t) => at(t, 0),
  domainUser: (t) => at(t, 0),
  otherDomain: (t) => at(t, 1),
  application: (t) => at(t, 0, "application"),
  subscriber: (t) => at(t, 0, "subscriber"),
};
const CALLER_NAMES = Object.keys(CALLERS) as CallerName[];

/** The world's own (non-user) key at each place: what refused and out-of-scope calls aim at. */
function keyNameAt(p: Place): CallerName {
  if (p.leaf) return p.leaf;
  if (p.domain === null) return "customer";
  return p.domain === 0 ? "domain" : "otherDomain";
}

/**
 * docs/api.md, "Paths and scopes", for a path whose first entity lies at `gate`:
 * - customer paths: customer-level keys of that customer;
 * - domain paths: keys at that domain's level, or customer-level keys of its customer;
 * - application and subscriber paths: that application's (subscriber's) keys, or any of the above.
 */
function mayCall(caller: Place, gate: Place): boolean {
  const sameCustomer = caller.tenant === gate.tenant;
  const customerLevel = sameCustomer && caller.domain === null;
  const thatDomainsLevel = sameCustomer && caller.domain !== null && caller.domain === gate.domain && caller.leaf === null;
  const itself = sameCustomer && caller.domain === gate.domain && caller.leaf !== null && caller.leaf === gate.leaf;
  if (gate.domain === null) return customerLevel;
  if (gate.leaf === null) return customerLevel || thatDomainsLevel;
  return customerLevel || thatDomainsLevel || itself;
}

type World = Record<Who, Tenant>;

interface PathCase {
  label: string;
  url: (w: World) => string;
  /**
   * What the path names for this caller: `gate`, the scope of its first entity, and `target`, that of its
   * last (where its keys live). Undefined when it names nothing the caller can resolve (401 for all).
   */
  names: (caller: Place) => { gate: Place; target: Place } | undefined;
  /** For paths that may name nothing: the place they point at, whose key refused calls aim at. */
  aim?: Place;
}

const fixed = (label: string, url: PathCase["url"], gate: Place, target: Place): PathCase => ({
  label, url, names: () => ({ gate, target }), aim: target,
});
const nowhere = (label: string, url: PathCase["url"], aim: Place): PathCase => ({ label, url, names: () => undefined, aim });

function tenantPaths(t: Who): PathCase[] {
  const o = other(t);
  const [c, d0, d1, app, sub] = [at(t), at(t, 0), at(t, 1), at(t, 0, "application"), at(t, 0, "subscriber")];
  const C = (w: World) => `/customers/${w[t].name}`;
  const D0 = (w: World) => w[t].domains[0];
  const D1 = (w: World) => w[t].domains[1];
  return [
    fixed(`/customers/{${t}}/keys`, (w) => `${C(w)}/keys`, c, c),
    fixed(`/tenants/{${t}.id}/apikeys`, (w) => `/tenants/${w[t].id}/apikeys`, c, c),
    fixed(`/customers/{${t}}/domains/{${t}.d0}/keys`, (w) => `${C(w)}/domains/${D0(w)}/keys`, c, d0),
    fixed(`/customers/{${t}}/domains/{${t}.d1}/keys`, (w) => `${C(w)}/domains/${D1(w)}/keys`, c, d1),
    fixed(`/customers/{${t}}/domains/{${t}.d0}/applications/ivr/keys`, (w) => `${C(w)}/domains/${D0(w)}/applications/ivr/keys`, c, app),
    fixed(`/customers/{${t}}/domains/{${t}.d0}/subscribers/{${t}.msisdn}/keys`,
      (w) => `${C(w)}/domains/${D0(w)}/subscribers/${w[t].subscriber.msisdn}/keys`, c, sub),
    fixed(`/domains/{${t}.d0}/keys`, (w) => `/domains/${D0(w)}/keys`, d0, d0),
    fixed(`/domains/{${t}.d1}/keys`, (w) => `/domains/${D1(w)}/keys`, d1, d1),
    fixed(`/domains/{${t}.d0}/applications/ivr/keys`, (w) => `/domains/${D0(w)}/applications/ivr/keys`, d0, app),
    fixed(`/domains/{${t}.d0}/subscribers/{${t}.msisdn}/keys`, (w) => `/domains/${D0(w)}/subscribers/${w[t].subscriber.msisdn}/keys`, d0, sub),
    fixed(`/applications/{${t}.ivr.id}/keys`, (w) => `/applications/${w[t].application.id}/keys`, app, app),
    fixed(`/subscribers/{${t}.subscriber.id}/keys`, (w) => `/subscribers/${w[t].subscriber.id}/keys`, sub, sub),
    {
      // an msisdn on a path without a domain is looked for within the caller's domain
      label: `/subscribers/{${t}.msisdn}/keys`,
      url: (w) => `/subscribers/${w[t].subscriber.msisdn}/keys`,
      names: (caller) => (caller.tenant === t && caller.domain === 0 ? { gate: sub, target: sub } : undefined),
      aim: sub,
    },
    {
      label: `/customers/self/domains/{${t}.d0}/keys`,
      url: (w) => `/customers/self/domains/${D0(w)}/keys`,
      names: (caller) => (caller.tenant === t ? { gate: c, target: d0 } : undefined),
      aim: d0,
    },
    // Paths whose entities do not nest: they name nothing, whoever calls.
    nowhere(`/customers/{${t}}/domains/{${o}.d0}/keys`, (w) => `${C(w)}/domains/${w[o].domains[0]}/keys`, at(o, 0)),
    nowhere(`/domains/{${t}.d1}/subscribers/{${t}.msisdn}/keys`, (w) => `/domains/${D1(w)}/subscribers/${w[t].subscriber.msisdn}/keys`, sub),
  ];
}

/** Paths that name the caller's own entities. */
const SELF_PATHS: PathCase[] = [
  { label: "/keys", url: () => "/keys", names: (caller) => ({ gate: caller, target: caller }) },
  { label: "/apikeys", url: () => "/apikeys", names: (caller) => ({ gate: caller, target: caller }) },
  { label: "/customers/self/keys", url: () => "/customers/self/keys", names: (caller) => ({ gate: at(caller.tenant), target: at(caller.tenant) }) },
  {
    label: "/domains/self/keys",
    url: () => "/domains/self/keys",
    names: (caller) => (caller.domain === null ? undefined : { gate: at(caller.tenant, caller.domain), target: at(caller.tenant, caller.domain) }),
  },
  {
    label: "/applications/self/keys",
    url: () => "/applications/self/keys",
    names: (caller) => (caller.leaf === "application" ? { gate: caller, target: caller } : undefined),
  },
  {
    label: "/subscribers/self/keys",
    url: () => "/subscribers/self/keys",
    names: (caller) => (caller.leaf === "subscriber" ? { gate: caller, target: caller } : undefined),
  },
  {
    // an application name on a path without a domain is looked for within the caller's domain
    label: "/applications/ivr/keys",
    url: () => "/applications/ivr/keys",
    names: (caller) => (caller.domain === 0 ? { gate: at(caller.tenant, 0, "application"), target: at(caller.tenant, 0, "application") } : undefined),
  },
];

const PATHS: PathCase[] = [...SELF_PATHS, ...tenantPaths("A"), ...tenantPaths("B")];
const METHODS = ["GET list", "POST", "GET one", "PUT", "DELETE", "ROTATE", "GET events"] as const;
type Method = (typeof METHODS)[number];

interface Case {
  tenant: Who;
  caller: CallerName;
  place: Place;
  path: PathCase;
  method: Method;
  scope: { gate: Place; target: Place } | undefined;
  allowed: boolean;
}

const CASES: Case[] = (["A", "B"] as const).flatMap((tenant) =>
  CALLER_NAMES.flatMap((caller) =>
    PATHS.flatMap((path) =>
      METHODS.map((method) => {
        const place = CALLERS[caller](tenant);
        const scope = path.names(place);
        return { tenant, caller, place, path, method, scope, allowed: scope !== undefined && mayCall(place, scope.gate) };
      }),
    ),
  ),
);

/** Places whose keys lie outside `target`: its parent, a sibling, and the same place of the other customer. */
function outside(target: Place): Place[] {
  const { tenant: t } = target;
  const elsewhere = { ...target, tenant: other(t) };
  if (target.domain === null) return [elsewhere];
  if (target.leaf === null) return [at(t), at(t, target.domain === 0 ? 1 : 0), elsewhere];
  return [at(t, 0), at(t, 0, target.leaf === "application" ? "subscriber" : "application"), elsewhere];
}

interface KeyBody {
  id: number;
  keyId: string;
  name: string;
  active: boolean;
  type: string;
  tenantId: number;
  domainId: number | null;
  applicationId: number | null;
  subscriberId: number | null;
}
interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

// The table the matrix is generated from, read back as sentences of the contract.
describe("the expectation table", () => {
  const allowedFor = (t: Who, caller: CallerName, label: string) =>
    CASES.find((c) => c.tenant === t && c.caller === caller && c.path.label === label && c.method === "GET list")!.allowed;
  it.each([
    ["every live key may use /keys", () => CALLER_NAMES.every((k) => allowedFor("A", k, "/keys"))],
    ["customer paths take customer-level keys of that customer only", () =>
      CALLER_NAMES.filter((k) => allowedFor("A", k, "/customers/{A}/keys")).join() === "customer,customerUser"],
    ["a domain path takes its domain's keys and its customer's", () =>
      CALLER_NAMES.filter((k) => allowedFor("A", k, "/domains/{A.d0}/keys")).join() === "customer,customerUser,domain,domainUser"],
    ["an application path takes that application's key too, not the subscriber's", () =>
      allowedFor("A", "application", "/applications/{A.ivr.id}/keys") && !allowedFor("A", "subscriber", "/applications/{A.ivr.id}/keys")],
    ["a sibling domain's key is refused", () => !allowedFor("A", "otherDomain", "/domains/{A.d0}/keys")],
    ["no key of one customer may use any path naming the other's entities", () =>
      CASES.filter((c) => c.path.label.includes("{B") && c.tenant === "A").every((c) => !c.allowed)],
    ["a path whose entities do not nest is refused to all", () =>
      CASES.filter((c) => c.path.label === "/customers/{A}/domains/{B.d0}/keys").every((c) => !c.allowed)],
  ])("%s", (_sentence, holds) => {
    expect(holds()).toBe(true);
  });
});

const NO_SUCH_KEY_ID = "XI" + "0".repeat(32);
const NO_SUCH_ID = 2 ** 31 - 1;

describe.each(backends())("isolation matrix on %s", (backend) => {
  let svc: TestService;
  let server: Listening;
  const world = {} as World;
  /** Each world key as GET /keys/self showed it before the matrix ran. */
  const before = new Map<string, KeyBody>();
  /** A key named "probe" at each place, that allowed PUTs flip (`active` follows). */
  const probes = new Map<string, KeyBody>();
  /** The one "matrix" key that POSTs make at each place. */
  const matrixKeys = new Map<string, number>();

  async function call<T = unknown>(method: string, path: string, token: string, body?: object): Promise<Answer<T>> {
    const res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    const json = (res.headers.get("content-type") ?? "").startsWith("application/json") && text ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, body: json as T, text };
  }

  const tokenOf = (tenant: Who, caller: CallerName) => world[tenant].keys[caller];
  const worldKeyAt = (p: Place) => {
    const keyId = tokenOf(p.tenant, keyNameAt(p));
    return { keyId, id: before.get(keyId)!.id, tenant: p.tenant };
  };

  /** The ids a key at `p` carries. */
  function idsOf(p: Place) {
    const t = world[p.tenant];
    return {
      tenantId: t.id,
      domainId: p.domain === null ? null : t.domainIds[p.domain],
      applicationId: p.leaf === "application" ? t.application.id : null,
      subscriberId: p.leaf === "subscriber" ? t.subscriber.id : null,
    };
  }
  /** Whether a key lies inside the scope at `p`. */
  function inside(key: KeyBody, p: Place): boolean {
    const ids = idsOf(p);
    return (
      key.tenantId === ids.tenantId &&
      (ids.domainId === null || key.domainId === ids.domainId) &&
      (ids.applicationId === null || key.applicationId === ids.applicationId) &&
      (ids.subscriberId === null || key.subscriberId === ids.subscriberId)
    );
  }

  function expectUnauthorized(a: Answer, what: string): void {
    expect(a.status, `${what}: ${a.text}`).toBe(401);
    expect(a.headers.get("www-authenticate"), what).toBe('Bearer realm="keyplane"');
    expect(a.headers.get("content-type"), what).toMatch(/^application\/json\b/);
    expect(a.body, what).toEqual({ status: 401, error: "unauthorized", message: expect.any(String) });
  }

  /** The key still authenticates as itself, with the name and active state it had. */
  async function expectUntouched(keyId: string): Promise<void> {
    const self = await call<KeyBody>("GET", "/keys/self", keyId);
    expect(self.status, `the key ${keyId.slice(-4)} no longer authenticates: ${self.text}`).toBe(200);
    const was = before.get(keyId)!;
    expect({ id: self.body.id, name: self.body.name, active: self.body.active }).toEqual({ id: was.id, name: was.name, active: was.active });
  }

  beforeAll(async () => {
    svc = await startService(backend, { metrics: true });
    server = await listen(svc.app, 0, "127.0.0.1");
    world.A = await createTenant(svc, "acme");
    world.B = await createTenant(svc, "globex");
    for (const t of ["A", "B"] as const) {
      for (const keyId of Object.values(world[t].keys)) {
        const self = await call<KeyBody>("GET", "/keys/self", keyId);
        expect(self.status).toBe(200);
        before.set(keyId, self.body);
      }
      const T = world[t];
      const root = T.keys.customer;
      const base = `/customers/${T.name}`;
      const placesAndPaths: [Place, string][] = [
        [at(t), `${base}/keys`],
        [at(t, 0), `${base}/domains/${T.domains[0]}/keys`],
        [at(t, 1), `${base}/domains/${T.domains[1]}/keys`],
        [at(t, 0, "application"), `${base}/domains/${T.domains[0]}/applications/ivr/keys`],
        [at(t, 0, "subscriber"), `${base}/domains/${T.domains[0]}/subscribers/${T.subscriber.msisdn}/keys`],
      ];
      for (const [place, path] of placesAndPaths) {
        const probe = await call<KeyBody>("POST", path, root, { name: "probe" });
        expect(probe.status, probe.text).toBe(200);
        probes.set(showPlace(place), probe.body);
      }
    }
  });
  afterAll(async () => {
    await server?.close(1_000);
    await svc?.stop();
  });

  it("builds a world whose keys lie where the matrix assumes", () => {
    for (const t of ["A", "B"] as const) {
      for (const caller of CALLER_NAMES) {
        const key = before.get(tokenOf(t, caller))!;
        expect(key, `${t}.${caller}`).toMatchObject(idsOf(CALLERS[caller](t)));
      }
    }
  });

  async function allowed(c: Case, token: string, base: string): Promise<void> {
    const target = c.scope!.target;
    const where = showPlace(target);
    switch (c.method) {
      case "GET list": {
        const list = await call<KeyBody[]>("GET", base, token);
        expect(list.status, list.text).toBe(200);
        const ids = list.body.map((k) => k.id);
        expect(ids, "ordered by id").toEqual([...ids].sort((x, y) => x - y));
        const strays = list.body.filter((k) => !inside(k, target));
        expect(strays.map((k) => `${k.name}#${k.id}`), `keys outside ${where} listed`).toEqual([]);
        // complete: every world key (users' included) and the probe that lie inside the scope
        const expected = [...before.values(), ...probes.values()].filter((k) => inside(k, target)).map((k) => k.id);
        expect(ids).toEqual(expect.arrayContaining(expected));
        return;
      }
      case "POST": {
        const made = await call<KeyBody>("POST", base, token, { name: "matrix" });
        expect(made.status, made.text).toBe(200);
        const type = target.leaf ?? "customer"; // a user key provisions customer-type keys at its own scope
        expect(made.body).toMatchObject({ ...idsOf(target), name: "matrix", active: true, type });
        const first = matrixKeys.get(where);
        if (first === undefined) matrixKeys.set(where, made.body.id);
        else expect(made.body.id, "provisioning is idempotent by scope and name").toBe(first);
        return;
      }
      case "GET one": {
        const key = worldKeyAt(target);
        const got = await call<KeyBody>("GET", `${base}/${key.keyId}`, token);
        expect(got.status, got.text).toBe(200);
        expect(got.body).toMatchObject({ id: key.id, keyId: key.keyId, ...idsOf(target) });
        return;
      }
      case "PUT": {
        // Each allowed PUT flips the probe, by keyId and by numeric id in turn.
        const probe = probes.get(where)!;
        const active = !probe.active;
        const put = await call<KeyBody>("PUT", `${base}/${active ? probe.keyId : probe.id}`, token, { active });
        expect(put.status, put.text).toBe(200);
        expect(put.body).toMatchObject({ id: probe.id, name: "probe", active, ...idsOf(target) });
        probe.active = active;
        return;
      }
      case "DELETE": {
        const victim = await call<KeyBody>("POST", base, token, { name: "victim" });
        expect(victim.status, victim.text).toBe(200);
        expect(victim.body).toMatchObject(idsOf(target));
        const gone = await call("DELETE", `${base}/${victim.body.id}`, token);
        expect(gone.status, gone.text).toBe(204);
        expect(gone.text).toBe("");
        expect((await call("GET", `${base}/${victim.body.keyId}`, token)).status).toBe(404);
        expectUnauthorized(await call("GET", "/keys/self", victim.body.keyId), "a deleted key as a credential");
        return;
      }
      case "ROTATE": {
        // Whoever holds the name "rotor" here is rotated; its successor takes the name, and the old key stops.
        const rotor = await call<KeyBody>("POST", base, token, { name: "rotor" });
        expect(rotor.status, rotor.text).toBe(200);
        const rotated = await call<KeyBody>("POST", `${base}/${rotor.body.id}/rotate`, token);
        expect(rotated.status, rotated.text).toBe(200);
        expect(rotated.body).toMatchObject({ ...idsOf(target), name: "rotor", type: rotor.body.type });
        expect(rotated.body.id).not.toBe(rotor.body.id);
        expectUnauthorized(await call("GET", "/keys/self", rotor.body.keyId), "a key rotated with no grace period");
        expect((await call("POST", `${base}/${rotor.body.keyId}/rotate`, token)).status).toBe(404);
        return;
      }
      case "GET events": {
        const probe = probes.get(where)!;
        const events = await call<{ key: { id: number }; action: string }[]>("GET", `${base}/${probe.id}/events`, token);
        expect(events.status, events.text).toBe(200);
        expect(events.body[0]).toMatchObject({ action: "created", key: { id: probe.id, ...idsOf(target) } });
        expect(events.body.every((e) => e.key.id === probe.id)).toBe(true);
        return;
      }
    }
  }

  async function refused(c: Case, token: string, base: string): Promise<void> {
    const aim = worldKeyAt(c.scope?.target ?? c.path.aim ?? c.place);
    const what = `${c.method} ${base}`;
    switch (c.method) {
      case "GET list":
        return expectUnauthorized(await call("GET", base, token), what);
      case "POST":
        return expectUnauthorized(await call("POST", base, token, { name: "intrusion" }), what);
      case "GET one":
        return expectUnauthorized(await call("GET", `${base}/${aim.keyId}`, token), what);
      case "PUT":
        expectUnauthorized(await call("PUT", `${base}/${aim.id}`, token, { name: "hijacked", active: false }), what);
        break;
      case "DELETE":
        expectUnauthorized(await call("DELETE", `${base}/${aim.keyId}`, token), what);
        break;
      case "ROTATE":
        expectUnauthorized(await call("POST", `${base}/${aim.id}/rotate`, token), what);
        break;
      case "GET events":
        return expectUnauthorized(await call("GET", `${base}/${aim.id}/events`, token), what);
    }
    // Another customer's key, at once; the caller's own customer's keys in the sweep at the end.
    if (aim.tenant !== c.tenant) await expectUntouched(aim.keyId);
  }

  describe.each(CALLER_NAMES.flatMap((caller) => (["A", "B"] as const).map((t) => [`${t}.${caller}`, t, caller] as const)))(
    "caller %s",
    (_label, tenant, caller) => {
      const cases = CASES.filter((c) => c.tenant === tenant && c.caller === caller);
      it.each(cases.map((c) => [c.method, c.path.label, c.allowed ? "allowed" : "401", c] as const))("%s %s: %s", async (_m, _p, _e, c) => {
        const token = tokenOf(c.tenant, c.caller);
        const base = c.path.url(world);
        await (c.allowed ? allowed(c, token, base) : refused(c, token, base));
      });
    },
  );

  // What lies outside a path's scope depends on the scope, not on who reaches it: for each path and
  // scope, the narrowest caller that may use it checks here; the matrix has shown the others reach it too.
  const narrowest = new Map<string, Case>();
  for (const c of CASES) if (c.allowed && c.method === "GET list") narrowest.set(`${c.path.label} ${showPlace(c.scope!.target)}`, c);
  const reachable = [...narrowest.values()];
  it.each(reachable.map((c) => [`${c.tenant}.${c.caller}`, c.path.label, c] as const))(
    "%s on %s: keys outside the path's scope are 404 to GET, PUT, rotation and events, and DELETE leaves them",
    async (_who, _path, c) => {
      const token = tokenOf(c.tenant, c.caller);
      const base = c.path.url(world);
      const missingGet = await call("GET", `${base}/${NO_SUCH_KEY_ID}`, token);
      const missingPut = await call("PUT", `${base}/${NO_SUCH_ID}`, token, { active: false });
      expect(missingGet.status, missingGet.text).toBe(404);
      expect(missingGet.body).toEqual({ status: 404, error: "not_found", message: expect.any(String) });
      expect(missingPut.body).toEqual(missingGet.body);
      for (const place of outside(c.scope!.target)) {
        const key = worldKeyAt(place);
        const what = `the ${showPlace(place)} key through ${base}`;
        const got = await call("GET", `${base}/${key.keyId}`, token);
        expect({ status: got.status, body: got.body }, what).toEqual({ status: 404, body: missingGet.body });
        const put = await call("PUT", `${base}/${key.id}`, token, { name: "hijacked", active: false });
        expect({ status: put.status, body: put.body }, what).toEqual({ status: 404, body: missingGet.body });
        const rotate = await call("POST", `${base}/${key.id}/rotate`, token);
        expect({ status: rotate.status, body: rotate.body }, what).toEqual({ status: 404, body: missingGet.body });
        const events = await call("GET", `${base}/${key.id}/events`, token);
        expect({ status: events.status, body: events.body }, what).toEqual({ status: 404, body: missingGet.body });
        const del = await call("DELETE", `${base}/${key.keyId}`, token);
        expect(del.status, what).toBe(204);
        if (key.tenant !== c.tenant) await expectUntouched(key.keyId);
      }
    },
  );

  it.each(CALLER_NAMES.flatMap((caller) => (["A", "B"] as const).map((t) => [`${t}.${caller}`, t, caller] as const)))(
    "%s: GET /events gives the events of every key it may manage, and of no other",
    async (_label, t, caller) => {
      const place = CALLERS[caller](t);
      const events: { id: number; action: string; key: KeyBody }[] = [];
      for (let next: string | undefined = "/events?limit=500"; next; ) {
        const page: Answer<typeof events> = await call<typeof events>("GET", next, tokenOf(t, caller));
        expect(page.status, page.text).toBe(200);
        events.push(...page.body);
        next = page.headers.get("link")?.match(/^<([^>]+)>; rel="next"$/)?.[1];
      }
      const strays = events.filter((e) => !inside(e.key, place));
      expect(strays.map((e) => `${e.action} ${e.key.name}#${e.key.id}`), `events of keys outside ${showPlace(place)}`).toEqual([]);
      const created = new Set(events.filter((e) => e.action === "created").map((e) => e.key.id));
      const expected = [...before.values(), ...probes.values()].filter((k) => inside(k, place)).map((k) => k.id);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.filter((id) => !created.has(id)), "keys inside whose created event is missing").toEqual([]);
    },
  );

  it("left every key of both customers as it was: each still authenticates, with its name and active state", async () => {
    for (const keyId of before.keys()) await expectUntouched(keyId);
    for (const t of ["A", "B"] as const) {
      const root = tokenOf(t, "customer");
      for (const [where, probe] of probes) {
        if (!where.startsWith(t)) continue;
        const got = await call<KeyBody>("GET", `/customers/self/keys/${probe.id}`, root);
        expect(got.status, `probe at ${where}: ${got.text}`).toBe(200);
        expect(got.body).toMatchObject({ keyId: probe.keyId, name: "probe", active: probe.active });
      }
      for (const name of ["intrusion", "hijacked", "victim"]) {
        const found = await call<KeyBody[]>("GET", `/customers/self/keys?name=${name}`, root);
        expect(found.body.map((k) => k.id), `${t} has keys named ${name}`).toEqual([]);
      }
      // one "matrix" key at each of the customer's five places, however many callers POSTed there
      const matrix = await call<KeyBody[]>("GET", `/customers/self/keys?name=matrix`, root);
      expect(matrix.body.map((k) => k.id).sort()).toEqual(
        [...matrixKeys].filter(([where]) => where.startsWith(t)).map(([, id]) => id).sort(),
      );
      expect(matrix.body).toHaveLength(5);
    }
  });

  it("leaves no token, name or raw path in a metric label", async () => {
    await expectCleanLabels(svc.metrics!, namesOf([world.A, world.B]));
  });
});
