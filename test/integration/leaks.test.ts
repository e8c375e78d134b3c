import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { githubEntries, githubReport, keyListServer, signingKey, type KeyListServer } from "../support/github-scanner.ts";
import { startPeer, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Leak response (docs/leaks.md): a report labels every token, and each live key it names is acted on by
// the nearest leak policy (the key's, its entities' upwards, the service's default), once: a report of
// the same token again, also at the same moment on another process, changes and records nothing.
type Key = { id: number; keyId: string; name: string; active: boolean; type: string; domainId: number | null; applicationId: number | null;
  expiresAt: string | null; replacedBy: number | null; [k: string]: unknown };
type Event = { action: string; actor: Record<string, unknown>; changes: Record<string, unknown>; requestId: string | null; key: { id: number } };
const sha256 = (token: string) => createHash("sha256").update(token).digest("hex");
const randomToken = () => "XI" + randomBytes(16).toString("hex").toUpperCase();

describe.each(backends())("leak reports on %s", (backend) => {
  const time = fakeClock();
  const github = signingKey("github-test-key-1");
  let keys: KeyListServer;
  let svc: TestService;
  /** Another process on the database, whose default is notify and whose rotations keep the old key 5 minutes. */
  let peer: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let root: ReturnType<TestService["as"]>;

  beforeAll(async () => {
    keys = await keyListServer([github]);
    const jobs = { expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 };
    svc = await startService(backend, { clock: time.clock, ...jobs, metrics: true, leaks: { githubKeysUrl: keys.url } });
    peer = await startPeer(svc, { clock: time.clock, ...jobs, leaks: { githubKeysUrl: keys.url, policy: "notify", graceSeconds: 300 } });
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    root = svc.as(acme.keys.customer);
  });
  afterAll(async () => {
    await peer?.stop();
    await svc?.stop();
    await keys?.close();
  });

  const provision = async (path: string, name: string, extra: object = {}, as = root) => {
    const res = await as.post(path, { name, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };
  const domainKeys = (t: Tenant = acme, d = 0) => `/customers/${t.name}/domains/${t.domains[d]}/keys`;
  const report = async (on: TestService, ...tokens: string[]) => {
    const res = await githubReport(on, githubEntries(...tokens), github);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { token_hash: string; token_type: string | null; label: string }[];
  };
  const selfStatus = async (token: string, on = svc) => (await on.as(token).get("/keys/self")).status;
  const events = async (id: number, as = root) => ((await as.get(`/keys/${id}/events`)).body as Event[]);
  const actions = async (id: number, as = root) => (await events(id, as)).map((e) => e.action);
  /** The key holding `name` in `t` now (names are unique within these tests). */
  const holder = async (t: Tenant, name: string) =>
    ((await svc.as(t.keys.customer).get(`/keys?name=${name}`)).body as Key[]).find((k) => k.replacedBy === null);

  it("labels each token: a live key's and a deleted key's true, a token of nobody's and a string that is none false", async () => {
    const live = await provision(domainKeys(), "labels-live", { policy: { leakPolicy: "notify" } });
    const gone = await provision(domainKeys(), "labels-gone");
    expect((await root.delete(`/keys/${gone.id}`)).status).toBe(204);
    const nobody = randomToken();
    const answer = await report(svc, live.keyId, gone.keyId, nobody, "ghp_notkeyplanesatall");
    expect(answer).toEqual([
      { token_hash: sha256(live.keyId), token_type: "keyplane_api_key", label: "true_positive" },
      { token_hash: sha256(gone.keyId), token_type: "keyplane_api_key", label: "true_positive" },
      { token_hash: sha256(nobody), token_type: "keyplane_api_key", label: "false_positive" },
      { token_hash: sha256("ghp_notkeyplanesatall"), token_type: "keyplane_api_key", label: "false_positive" },
    ]);
    // The deleted key is not acted on: its history ends with its deletion.
    expect(await actions(gone.id)).toEqual(["created", "deleted"]);
    expect(await actions(live.id)).toEqual(["created", "leaked"]);
  });

  it("counts an expired key as one that was keyplane's, and leaves it be", async () => {
    const expiring = await provision(domainKeys(), "labels-expired", { expiresIn: 60 });
    time.advance(61_000);
    expect((await report(svc, expiring.keyId))[0]!.label).toBe("true_positive");
    expect(await actions(expiring.id)).toEqual(["created"]);
  });

  it("rotates by default: the old token is 401 at once, here and on the other process; the successor works, same name and scope", async () => {
    const old = await provision(domainKeys(), "rotated-by-default", { expiresIn: 86_400 });
    expect(await selfStatus(old.keyId, peer)).toBe(200);
    await report(svc, old.keyId);
    expect(await selfStatus(old.keyId)).toBe(401);
    await expect.poll(() => selfStatus(old.keyId, peer), { timeout: 1_000, interval: 20 }).toBe(401);
    const fresh = (await holder(acme, "rotated-by-default"))!;
    expect(fresh.id).not.toBe(old.id);
    for (const field of ["name", "type", "active", "tenantId", "domainId", "applicationId", "subscriberId"]) expect(fresh[field], field).toEqual(old[field]);
    // A leak does not lengthen a key's life: the successor keeps the old key's expiry.
    expect(fresh.expiresAt).toBe(old.expiresAt);
    expect(await selfStatus(fresh.keyId)).toBe(200);
    expect(await selfStatus(fresh.keyId, peer)).toBe(200);

    const history = await events(old.id);
    expect(history.map((e) => e.action)).toEqual(["created", "leaked", "rotated"]);
    const [, leaked, rotated] = history;
    expect(leaked).toMatchObject({
      actor: { type: "scanner", name: "github" },
      changes: { leak: { url: "https://github.com/octocat/hello/blob/main/.env", source: "content" } },
      requestId: expect.any(String),
    });
    expect(rotated).toMatchObject({ actor: { type: "scanner", name: "github" }, changes: { replacedBy: [null, fresh.id] } });
    expect(await actions(fresh.id)).toEqual(["created"]);
  });

  it("disables by the key's own policy: 401 until enabled again, and an updated event by the scanner", async () => {
    const key = await provision(domainKeys(), "disabled-by-own", { policy: { leakPolicy: "disable" } });
    await report(svc, key.keyId);
    expect(await selfStatus(key.keyId)).toBe(401);
    expect((await root.get(`/keys/${key.id}`)).body).toMatchObject({ active: false, replacedBy: null });
    const history = await events(key.id);
    expect(history.map((e) => e.action)).toEqual(["created", "leaked", "updated"]);
    expect(history[2]).toMatchObject({ actor: { type: "scanner", name: "github" }, changes: { active: [true, false] } });
  });

  it("only records the leak by notify: the key keeps working, unchanged", async () => {
    const key = await provision(domainKeys(), "notified", { policy: { leakPolicy: "notify" } });
    await report(svc, key.keyId);
    expect(await selfStatus(key.keyId)).toBe(200);
    expect((await root.get(`/keys/${key.id}`)).body).toMatchObject({ active: true, replacedBy: null, expiresAt: null });
    expect(await actions(key.id)).toEqual(["created", "leaked"]);
  });

  describe("the nearest leak policy set, not the strictest", () => {
    // globex: the customer says disable, its first domain notify, that domain's application rotate.
    beforeAll(async () => {
      const a = svc.admin;
      const [d1] = globex.domains;
      for (const [path, leakPolicy] of [
        ["/admin/customers/globex/policy", "disable"],
        [`/admin/customers/globex/domains/${d1}/policy`, "notify"],
        [`/admin/customers/globex/domains/${d1}/applications/ivr/policy`, "rotate"],
      ]) expect((await a.put(path!, { leakPolicy })).status).toBe(200);
    });
    const [d1, d2] = ["sip.globex.example", "media.globex.example"];
    /** What became of a key: still working (notify), gone with a successor in its place (rotate), or disabled. */
    const outcome = async (key: Key, t: Tenant) => {
      if ((await selfStatus(key.keyId)) === 200) return "notify";
      const now = await svc.as(t.keys.customer).get(`/keys/${key.id}`);
      const successor = await holder(t, key.name);
      if (now.status === 404 && successor && successor.id !== key.id) return "rotate";
      return (now.body as Key).active === false ? "disable" : `unexpected: ${JSON.stringify(now.body)}`;
    };

    it.each([
      ["a domain key: the domain's notify over the customer's disable", `/customers/globex/domains/${d1}/keys`, undefined, "notify"],
      ["a key of its own: disable over its domain's notify", `/customers/globex/domains/${d1}/keys`, "disable", "disable"],
      ["an application key: the application's rotate over the domain's notify", `/customers/globex/domains/${d1}/applications/ivr/keys`, undefined, "rotate"],
      ["a subscriber key: its domain's notify", `/customers/globex/domains/${d1}/subscribers/442071230000/keys`, undefined, "notify"],
      ["a key of the other domain: the customer's disable", `/customers/globex/domains/${d2}/keys`, undefined, "disable"],
      ["a customer key: the customer's disable", "/customers/globex/keys", undefined, "disable"],
      ["a key of its own under the customer's disable: notify, looser, still binds", "/customers/globex/keys", "notify", "notify"],
    ])("%s", async (name, path, own, expected) => {
      const key = await provision(path, `nearest-${expected}-${randomBytes(3).toString("hex")}`, own ? { policy: { leakPolicy: own } } : {}, svc.as(globex.keys.customer));
      await report(svc, key.keyId);
      expect(await outcome(key, globex), name).toBe(expected);
      expect((await events(key.id, svc.as(globex.keys.customer))).filter((e) => e.action === "leaked")).toHaveLength(1);
    });
  });

  it("takes the process's configured default, and its grace: the other process notifies, its rotations keep the old key 5 minutes", async () => {
    const notified = await provision(domainKeys(), "peer-default");
    await report(peer, notified.keyId);
    expect(await actions(notified.id)).toEqual(["created", "leaked"]);
    expect(await selfStatus(notified.keyId)).toBe(200);

    const old = await provision(domainKeys(), "peer-grace", { policy: { leakPolicy: "rotate" } });
    await report(peer, old.keyId);
    const graceEnd = new Date(time.now().getTime() + 300_000).toISOString();
    expect((await root.get(`/keys/${old.id}`)).body).toMatchObject({ expiresAt: graceEnd, replacedBy: expect.any(Number) });
    expect(await selfStatus(old.keyId)).toBe(200);
    time.advance(300_000);
    expect(await selfStatus(old.keyId)).toBe(401);
    expect(await selfStatus((await holder(acme, "peer-grace"))!.keyId)).toBe(200);
  });

  it("acts once: a report of the same token again, or twice in one report, changes and records nothing, and is still true", async () => {
    const key = await provision(domainKeys(), "reported-often", { policy: { leakPolicy: "rotate" } });
    // Reported on the process with a grace period, so the old key stays live and could be acted on again.
    expect((await report(peer, key.keyId, key.keyId)).map((a) => a.label)).toEqual(["true_positive", "true_positive"]);
    expect((await report(peer, key.keyId))[0]!.label).toBe("true_positive");
    expect((await report(svc, key.keyId))[0]!.label).toBe("true_positive");
    expect(await actions(key.id)).toEqual(["created", "leaked", "rotated"]);
    expect(((await root.get(`${domainKeys()}?name=reported-often`)).body as Key[])).toHaveLength(2);

    const notified = await provision(domainKeys(), "notified-often", { policy: { leakPolicy: "notify" } });
    for (let i = 0; i < 3; i++) await report(svc, notified.keyId);
    expect(await actions(notified.id)).toEqual(["created", "leaked"]);
  });

  it("acts once when reports of one token arrive at once, on both processes", async () => {
    for (const leakPolicy of ["rotate", "disable", "notify"]) {
      const key = await provision(domainKeys(), `raced-${leakPolicy}`, { policy: { leakPolicy } });
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => githubReport(i % 2 ? peer : svc, githubEntries(key.keyId), github)));
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      for (const a of answers) expect(a.body).toEqual([expect.objectContaining({ label: "true_positive" })]);
      const recorded = await actions(key.id);
      expect(recorded.filter((a) => a === "leaked"), leakPolicy).toHaveLength(1);
      expect(recorded.filter((a) => a !== "created" && a !== "leaked"), leakPolicy).toHaveLength(leakPolicy === "notify" ? 0 : 1);
      expect(((await root.get(`${domainKeys()}?name=raced-${leakPolicy}`)).body as Key[]).length, leakPolicy).toBeLessThanOrEqual(2);
    }
  });

  it("cuts short the grace of a key rotated before its leak, which a successor already replaces", async () => {
    const old = await provision(domainKeys(), "rotated-then-leaked");
    const rotated = await root.post(`/keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 });
    expect(rotated.status).toBe(200);
    await report(svc, old.keyId);
    expect(await selfStatus(old.keyId)).toBe(401);
    expect(await selfStatus((rotated.body as Key).keyId)).toBe(200);
    const history = await events(old.id);
    expect(history.map((e) => e.action)).toEqual(["created", "rotated", "leaked", "updated"]);
    expect(history[3]!.changes).toEqual({ expiresAt: [new Date(time.now().getTime() + 3_600_000).toISOString(), time.now().toISOString()] });
  });

  describe("POST /admin/leaks", () => {
    it("takes any scanner's tokens with the admin token, records the admin as the scanner, and answers the same labels", async () => {
      const key = await provision(domainKeys(), "admin-reported", { policy: { leakPolicy: "notify" } });
      const res = await svc.admin.post("/admin/leaks", { tokens: [key.keyId, "password123"], url: "https://paste.example/x", source: "paste site" });
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { token_hash: sha256(key.keyId), token_type: null, label: "true_positive" },
        { token_hash: sha256("password123"), token_type: null, label: "false_positive" },
      ]);
      const leaked = (await events(key.id)).find((e) => e.action === "leaked")!;
      expect(leaked).toMatchObject({ actor: { type: "scanner", name: "admin" }, changes: { leak: { url: "https://paste.example/x", source: "paste site" } } });

      const bare = await provision(domainKeys(), "admin-reported-bare", { policy: { leakPolicy: "notify" } });
      expect((await svc.admin.post("/admin/leaks", { tokens: [bare.keyId] })).status).toBe(200);
      expect((await events(bare.id)).find((e) => e.action === "leaked")!.changes).toEqual({ leak: { url: null, source: null } });
    });

    it("is 401 without the admin token, with a key's token, and acts on nothing", async () => {
      const key = await provision(domainKeys(), "admin-refused");
      for (const req of [
        svc.as("").post("/admin/leaks", { tokens: [key.keyId] }),
        svc.as(acme.keys.customer).post("/admin/leaks", { tokens: [key.keyId] }),
        svc.as(key.keyId).post("/admin/leaks", { tokens: [key.keyId] }),
      ]) {
        const res = await req;
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ status: 401, error: "unauthorized" });
      }
      expect(await actions(key.id)).toEqual(["created"]);
      expect(await selfStatus(key.keyId)).toBe(200);
    });
  });

  describe("leakPolicy through the policy endpoints", () => {
    it("is set on a key by the key above it, shown, and refused to the key itself (403)", async () => {
      const key = await provision(domainKeys(), "policy-set");
      const put = await root.put(`/keys/${key.id}`, { policy: { leakPolicy: "disable" } });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ policy: { leakPolicy: "disable" } });
      expect((await svc.as(key.keyId).put("/keys/self", { policy: { leakPolicy: "notify" } })).status).toBe(403);
      expect((await root.get(`/keys/${key.id}`)).body).toMatchObject({ policy: { leakPolicy: "disable" } });
      expect((await events(key.id)).at(-1)).toMatchObject({ action: "updated", changes: { policy: [null, { leakPolicy: "disable" }] } });
    });

    it("is set on an entity, read back, and a value it does not know is 400", async () => {
      const path = `/admin/customers/acme/domains/${acme.domains[1]}/policy`;
      expect((await svc.admin.put(path, { leakPolicy: "notify", ratelimits: [{ name: "calls", limit: 5, windowSeconds: 1 }] })).status).toBe(200);
      expect((await svc.admin.get(path)).body).toEqual({ ratelimits: [{ name: "calls", limit: 5, windowSeconds: 1 }], leakPolicy: "notify" });
      const bad = await svc.admin.put(path, { leakPolicy: "revoke" });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: "bad_request", message: expect.stringContaining("leakPolicy") });
    });
  });

  it("counts reports by scanner and label, and acts by policy, in /metrics", async () => {
    const text = await svc.metrics!.text();
    expect(text).toMatch(/keyplane_leak_reports_total\{scanner="github",label="true_positive"\} [1-9]/);
    expect(text).toMatch(/keyplane_leak_reports_total\{scanner="github",label="false_positive"\} [1-9]/);
    expect(text).toMatch(/keyplane_leak_reports_total\{scanner="admin",label="true_positive"\} [1-9]/);
    for (const policy of ["rotate", "disable", "notify"]) expect(text).toMatch(new RegExp(`keyplane_leak_actions_total\\{policy="${policy}"\\} [1-9]`));
    expect(text).toMatch(/keyplane_key_events_total\{action="leaked"\} [1-9]/);
    expect(text).not.toMatch(/XI[0-9A-F]{32}/);
  });
});
