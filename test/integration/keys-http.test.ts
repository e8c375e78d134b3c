import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyObject } from "../../src/http/schemas.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// The key paths of docs/api.md ("Keys") over HTTP, on each backend.
type Key = { id: number; keyId: string; name: string; active: boolean; type: string; [k: string]: unknown };

describe.each(backends())("key paths on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let root: ReturnType<TestService["as"]>;

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    root = svc.as(acme.keys.customer);
  });
  afterAll(() => svc.stop());

  const provision = async (path: string, body: object, as = root) => {
    const res = await as.post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };

  describe("the key shape", () => {
    it("has every field of the full form, at every scope", async () => {
      const d = acme.domains[0];
      const cases: [string, string, string[]][] = [
        ["/customers/acme/keys", "customer", []],
        [`/customers/acme/domains/${d}/keys`, "customer", ["domain"]],
        [`/customers/acme/domains/${d}/applications/ivr/keys`, "application", ["domain", "application"]],
        [`/customers/acme/domains/${d}/subscribers/${acme.subscriber.msisdn}/keys`, "subscriber", ["domain", "subscriber"]],
      ];
      for (const [path, type, embedded] of cases) {
        const key = await provision(path, { name: "shape" });
        expect(keyObject.safeParse(key).error).toBeUndefined();
        expect(key).toMatchObject({ type, active: true, secret: null, deletedAt: null, userId: null, tenant: { name: "acme" }, "tenant-id": acme.id });
        expect(key.keyId).toMatch(/^XI[0-9A-F]{32}$/);
        expect(key.tenantId).toBe(acme.id);
        expect(key.activeAt).toBe(key.createdAt);
        expect(new Date(key.createdAt as string).toISOString()).toBe(key.createdAt);
        for (const part of ["domain", "application", "subscriber", "user"]) {
          expect(part in key, `${part} in ${type} key`).toBe(embedded.includes(part));
          expect(`${part}-id` in key).toBe(embedded.includes(part));
          if (embedded.includes(part)) expect(key[`${part}-id`]).toBe(key[`${part}Id`]);
        }
      }
    });

    it("shows a user's key with its user", async () => {
      const res = await svc.as(acme.keys.domainUser).get("/keys/self");
      expect(res.status).toBe(200);
      expect(keyObject.safeParse(res.body).error).toBeUndefined();
      expect(res.body).toMatchObject({
        type: "user", name: `ops@acme.example`, user: { email: "ops@acme.example" }, domain: { domain: acme.domains[0] },
      });
      expect(res.body["user-id"]).toBe(res.body.userId);
    });
  });

  describe("provisioning", () => {
    it("is idempotent: the same scope and name give the same key, whatever active says", async () => {
      const first = await provision("/customers/acme/keys", { name: "billing" });
      const again = await provision("/customers/acme/keys", { name: "billing", active: false });
      expect(again).toEqual(first);
    });

    it("makes an inactive key when asked", async () => {
      const key = await provision("/customers/acme/keys", { name: "dormant", active: false });
      expect(key).toMatchObject({ active: false, activeAt: null });
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
    });

    it("on /keys gives the caller's own scope and permissions", async () => {
      const appKey = svc.as(acme.keys.application);
      const key = await provision("/keys", { name: "worker" }, appKey);
      expect(key).toMatchObject({ type: "application", applicationId: acme.application.id, domainId: acme.domainIds[0] });
      const userMade = await provision("/keys", { name: "from-user" }, svc.as(acme.keys.domainUser));
      expect(userMade).toMatchObject({ type: "customer", domainId: acme.domainIds[0], userId: null });
    });

    it("refuses a body without a name, an empty name, an over-long name or a wrong type", async () => {
      for (const body of [{}, { name: "" }, { name: "x".repeat(129) }, { name: 5 }, { name: "ok", active: "yes" }]) {
        const res = await root.post("/customers/acme/keys", body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toMatchObject({ status: 400, error: "bad_request" });
      }
      expect((await provision("/customers/acme/keys", { name: "x".repeat(128) })).name).toHaveLength(128);
    });
  });

  describe("one key", () => {
    it("is found by keyId and by numeric id, the same on every spelling", async () => {
      const key = await provision("/customers/acme/keys", { name: "lookup" });
      for (const path of [
        `/customers/acme/keys/${key.keyId}`, `/customers/acme/keys/${key.id}`, `/tenants/acme/apikeys/${key.id}`,
        `/customers/${acme.id}/keys/${key.id}`, `/customers/self/keys/${key.id}`, `/keys/${key.id}`, `/apikeys/${key.keyId}`,
      ]) {
        const res = await root.get(path);
        expect(res.status, path).toBe(200);
        expect(res.body, path).toEqual(key);
      }
    });

    it("is 404 when it does not exist or lies outside, the same answer for both", async () => {
      const foreign = await provision("/customers/globex/keys", { name: "foreign" }, svc.as(globex.keys.customer));
      const missing = await root.get("/customers/acme/keys/999999");
      const outside = await root.get(`/customers/acme/keys/${foreign.id}`);
      const outsideById = await root.put(`/keys/${foreign.keyId}`, { name: "stolen" });
      for (const res of [missing, outside, outsideById]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(missing.body);
      }
      expect((await svc.as(globex.keys.customer).get(`/keys/${foreign.id}`)).body.name).toBe("foreign");
    });

    it("renames, and refuses to rename onto a live name of the same scope (409)", async () => {
      const a = await provision("/customers/acme/keys", { name: "rename-a" });
      await provision("/customers/acme/keys", { name: "rename-b" });
      const renamed = await root.put(`/customers/acme/keys/${a.id}`, { name: "rename-c" });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id: a.id, keyId: a.keyId, name: "rename-c" });
      const clash = await root.put(`/customers/acme/keys/${a.id}`, { name: "rename-b" });
      expect(clash.status).toBe(409);
      expect(clash.body).toMatchObject({ status: 409, error: "conflict" });
      expect((await root.get(`/keys/${a.id}`)).body.name).toBe("rename-c");
    });

    it("changes nothing on an empty body", async () => {
      const key = await provision("/customers/acme/keys", { name: "untouched" });
      const res = await root.put(`/keys/${key.keyId}`, {});
      expect(res.status).toBe(200);
      expect(res.body).toEqual(key);
    });

    it("disabled answers 401 as a credential, and works again when re-enabled", async () => {
      const key = await provision("/customers/acme/domains/self/keys".replace("self", acme.domains[0]), { name: "toggle" });
      const as = svc.as(key.keyId);
      expect((await as.get("/keys/self")).status).toBe(200);
      const off = await root.put(`/keys/${key.id}`, { active: false });
      expect(off.body).toMatchObject({ active: false });
      const denied = await as.get("/keys/self");
      expect(denied.status).toBe(401);
      expect(denied.headers["www-authenticate"]).toBe('Bearer realm="keyplane"');
      expect(denied.body).toMatchObject({ status: 401, error: "unauthorized" });
      const on = await root.put(`/keys/${key.id}`, { active: true });
      expect(on.body.active).toBe(true);
      expect(on.body.activeAt >= off.body.modifiedAt).toBe(true);
      expect((await as.get("/keys/self")).status).toBe(200);
    });

    it("deleted answers 204 twice, is gone from lists and gets, and answers 401", async () => {
      const key = await provision("/customers/acme/keys", { name: "doomed" });
      expect((await root.delete(`/customers/acme/keys/${key.keyId}`)).status).toBe(204);
      expect((await root.delete(`/customers/acme/keys/${key.keyId}`)).status).toBe(204);
      expect((await root.get(`/keys/${key.id}`)).status).toBe(404);
      expect((await root.get("/keys?name=doomed")).body).toEqual([]);
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(401);
      // The name is free again: a new key, not the old one.
      const reborn = await provision("/customers/acme/keys", { name: "doomed" });
      expect(reborn.id).not.toBe(key.id);
    });

    it("is not deleted from outside its path or its caller's scope (still 204)", async () => {
      const key = await provision(`/customers/acme/domains/${acme.domains[1]}/keys`, { name: "sibling" });
      expect((await root.delete(`/customers/acme/domains/${acme.domains[0]}/keys/${key.id}`)).status).toBe(204);
      expect((await svc.as(acme.keys.domain).delete(`/keys/${key.id}`)).status).toBe(204);
      expect((await svc.as(globex.keys.customer).delete(`/keys/${key.keyId}`)).status).toBe(204);
      expect((await svc.as(key.keyId).get("/keys/self")).status).toBe(200);
    });
  });

  describe("/keys/self", () => {
    it("answers the calling key at every level", async () => {
      for (const [level, token] of Object.entries(acme.keys)) {
        const res = await svc.as(token).get("/keys/self");
        expect(res.status, level).toBe(200);
        expect(res.body.keyId, level).toBe(token);
      }
    });

    it("answers the same on every spelling, and other methods are 405 with Allow", async () => {
      const plain = await root.get("/keys/self");
      for (const path of ["/apikeys/self", "/keys/self/", "/keys/self?verbose=1"]) {
        const res = await root.get(path);
        expect(res.status, path).toBe(200);
        expect(res.body, path).toEqual(plain.body);
        expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(res.headers["x-request-id"]).toBeTruthy();
      }
      const post = await root.post("/keys/self", { name: "x" });
      expect(post.status).toBe(405);
      expect(post.headers.allow).toBe("GET, PUT, DELETE"); // PUT and DELETE on /keys/self work too
      expect(post.body).toMatchObject({ status: 405, error: "method_not_allowed" });
    });

    it("sends a name beyond ASCII whole (Content-Length counts bytes)", async () => {
      const key = await provision("/customers/acme/keys", { name: "Café ☎ 電話" });
      const res = await svc.as(key.keyId).get("/keys/self");
      expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.text));
      expect(res.body.name).toBe("Café ☎ 電話");
    });

    it("is refused without a valid, active key", async () => {
      for (const header of [undefined, "Basic abc", "Bearer", "Bearer XI123", `Bearer ${"XI" + "0".repeat(32)}`, `bearer ${acme.keys.customer.toLowerCase()}`]) {
        const req = header ? svc.as("").get("/keys/self").set("Authorization", header) : svc.as("").get("/keys/self").unset("Authorization");
        const res = await req;
        expect(res.status, header).toBe(401);
        expect(res.headers["www-authenticate"]).toBe('Bearer realm="keyplane"');
      }
      const lower = await svc.as("").get("/keys/self").set("Authorization", `bEaReR ${acme.keys.customer}`);
      expect(lower.status).toBe(200);
    });
  });

  describe("lists", () => {
    let scope: string;
    let made: Key[];

    beforeAll(async () => {
      const res = await svc.admin.post("/admin/customers/acme/domains", { domain: "list.acme.example" });
      expect(res.status).toBe(201);
      scope = "/customers/acme/domains/list.acme.example/keys";
      made = [];
      for (let i = 0; i < 12; i++) made.push(await provision(scope, { name: `l${String(i).padStart(2, "0")}`, active: i % 3 !== 0 }));
    });

    it("hold every live key of the scope, ordered by id", async () => {
      const res = await root.get(scope);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.body).toEqual(made);
    });

    it("page with limit and after, with a Link header while more remain", async () => {
      const seen: Key[] = [];
      let next: string | undefined = `${scope}?limit=5`;
      let pages = 0;
      while (next) {
        const res = await root.get(next);
        expect(res.status).toBe(200);
        seen.push(...res.body);
        pages++;
        next = /^<([^>]+)>; rel="next"$/.exec(res.headers.link ?? "")?.[1];
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(made);
      const after = await root.get(`${scope}?after=${made[9]!.id}`);
      expect(after.body).toEqual(made.slice(10));
    });

    it("filter by active, type and name", async () => {
      expect((await root.get(`${scope}?active=false`)).body).toEqual(made.filter((k) => !k.active));
      expect((await root.get(`${scope}?name=l04`)).body).toEqual([made[4]]);
      expect((await root.get(`${scope}?type=application`)).body).toEqual([]);
      expect((await root.get(`${scope}?type=customer&active=true&limit=2`)).body).toEqual(made.filter((k) => k.active).slice(0, 2));
    });

    it("stream whole and in order when longer than one written chunk", async () => {
      expect((await svc.admin.post("/admin/customers/acme/domains", { domain: "long.acme.example" })).status).toBe(201);
      const long = "/customers/acme/domains/long.acme.example/keys";
      const ids: number[] = [];
      for (let batch = 0; batch < 6; batch++) {
        const made = await Promise.all(Array.from({ length: 50 }, (_, i) => provision(long, { name: `k${batch * 50 + i}` })));
        ids.push(...made.map((k) => k.id));
      }
      const res = await root.get(long);
      expect(res.text.length).toBeGreaterThan(3 * 64 * 1024);
      expect((res.body as Key[]).map((k) => k.id)).toEqual(ids.sort((a, b) => a - b));
    });

    it("refuse bad parameters with 400", async () => {
      for (const q of ["limit=0", "limit=1001", "limit=x", "after=-1", "active=yes", "type=admin", `name=${"x".repeat(129)}`]) {
        const res = await root.get(`${scope}?${q}`);
        expect(res.status, q).toBe(400);
        expect(res.body.error).toBe("bad_request");
      }
    });

    it("of a caller on /keys hold what it may manage and nothing else", async () => {
      const domainKeys = (await svc.as(acme.keys.domain).get("/keys")).body as Key[];
      expect(domainKeys.length).toBeGreaterThan(0);
      expect(domainKeys.every((k) => k.domainId === acme.domainIds[0])).toBe(true);
      const subscriberKeys = (await svc.as(acme.keys.subscriber).get("/keys")).body as Key[];
      expect(subscriberKeys.every((k) => k.subscriberId === acme.subscriber.id)).toBe(true);
      const all = (await root.get("/keys")).body as Key[];
      expect(all.every((k) => k.tenantId === acme.id)).toBe(true);
      expect(all.some((k) => k.type === "user")).toBe(true);
      expect(all.map((k) => k.id)).toEqual([...all.map((k) => k.id)].sort((a, b) => a - b));
    });
  });

  describe("paths", () => {
    it("take self, ids, uuids and names for every entity", async () => {
      const d = acme.domains[0];
      const uuid = (await svc.admin.get(`/admin/customers/acme/domains/${d}`)).body.uuid;
      const appKey = svc.as(acme.keys.application);
      const subKey = svc.as(acme.keys.subscriber);
      const domainKey = svc.as(acme.keys.domain);
      const ok: [ReturnType<TestService["as"]>, string][] = [
        [root, `/customers/${acme.id}/domains/${acme.domainIds[0]}/keys`],
        [root, `/customers/acme/domains/${uuid}/keys`],
        [root, `/tenants/ACME/domains/${d.toUpperCase()}/apikeys`],
        [domainKey, "/domains/self/keys"],
        [domainKey, `/domains/${d}/applications/ivr/keys`],
        [domainKey, `/domains/self/subscribers/${acme.subscriber.msisdn}/keys`],
        [domainKey, `/applications/ivr/keys`],
        [domainKey, `/subscribers/${acme.subscriber.msisdn}/keys`],
        [appKey, "/applications/self/keys"],
        [appKey, `/applications/${acme.application.id}/apikeys`],
        [subKey, "/subscribers/self/keys"],
        [subKey, `/subscribers/${acme.subscriber.id}/keys`],
        [svc.as(acme.keys.customerUser), "/customers/self/keys"],
        [svc.as(acme.keys.domainUser), "/domains/self/keys"],
      ];
      for (const [as, path] of ok) expect((await as.get(path)).status, path).toBe(200);
    });

    it("answer 401 for unknown entities, and for self where the caller has none", async () => {
      for (const path of ["/customers/nobody/keys", "/domains/nowhere.example/keys", "/applications/ghost/keys", "/subscribers/999/keys", "/domains/self/keys"]) {
        const res = await root.get(path);
        expect(res.status, path).toBe(401);
        expect(res.body.error).toBe("unauthorized");
      }
    });

    it("refuse the customer path to a domain key, even of that customer", async () => {
      const res = await svc.as(acme.keys.domain).get(`/customers/acme/domains/${acme.domains[0]}/keys`);
      expect(res.status).toBe(401);
    });
  });
});
