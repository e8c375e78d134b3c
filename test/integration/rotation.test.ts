import { beforeAll, describe, expect, it } from "vitest";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import type { TestService } from "../support/service.ts";
import { useTwoProcesses, type Tenant, type TwoProcesses } from "../support/world.ts";

// Rotation (docs/api.md, "Lifecycle"): a successor with a new token takes the key's name; the old key
// works through its grace period, on every process, and not a second longer; a key is rotated once.
type Key = { id: number; keyId: string; name: string; active: boolean; type: string; expiresAt: string | null; replacedBy: number | null; [k: string]: unknown };
const SECOND = 1000;

describe.each(backends())("rotation on %s", (backend) => {
  const time = fakeClock();
  const processes = useTwoProcesses(backend, time);
  let svc: TestService, peer: TestService, acme: Tenant, root: TwoProcesses["root"];
  beforeAll(() => ({ svc, peer, acme, root } = processes()));

  const domainKeys = () => `/customers/acme/domains/${acme.domains[0]}/keys`;
  const provision = async (name: string, extra: object = {}) => {
    const res = await root.post(domainKeys(), { name, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };
  const rotate = async (path: string, body?: object, as = root) => {
    const res = await as.post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };
  const selfStatus = async (on: TestService, token: string) => (await on.as(token).get("/keys/self")).status;
  const listed = async (name: string) => ((await root.get(`${domainKeys()}?name=${name}`)).body as Key[]).map((k) => k.id);

  it("with no grace period: a new token in the same place, and the old key refused at once", async () => {
    const old = await provision("billing", { active: true });
    expect(await selfStatus(svc, old.keyId)).toBe(200);
    const fresh = await rotate(`${domainKeys()}/${old.id}/rotate`);
    const same = ["name", "active", "type", "tenantId", "domainId", "applicationId", "subscriberId", "userId"] as const;
    for (const field of same) expect(fresh[field], field).toEqual(old[field]);
    expect(fresh.keyId).not.toBe(old.keyId);
    expect(fresh.id).not.toBe(old.id);
    expect(fresh).toMatchObject({ replacedBy: null, expiresAt: null, createdAt: time.now().toISOString() });
    expect(await selfStatus(svc, old.keyId)).toBe(401);
    expect(await selfStatus(svc, fresh.keyId)).toBe(200);
    expect(await listed("billing")).toEqual([fresh.id]);
    expect((await root.get(`/keys/${old.id}`)).status).toBe(404);
  });

  it("with a grace period: both keys work and are listed, the name is the new key's, and at the end only it works", async () => {
    const old = await provision("invoices");
    expect(await selfStatus(peer, old.keyId)).toBe(200);
    const fresh = await rotate(`/domains/${acme.domains[0]}/keys/${old.keyId}/rotate`, { gracePeriodSeconds: 3600 }, svc.as(acme.keys.domain));
    const graceEnd = new Date(time.now().getTime() + 3600 * SECOND);
    expect((await root.get(`/keys/${old.id}`)).body).toMatchObject({ replacedBy: fresh.id, expiresAt: graceEnd.toISOString() });
    for (const on of [svc, peer]) {
      expect(await selfStatus(on, old.keyId)).toBe(200);
      expect(await selfStatus(on, fresh.keyId)).toBe(200);
    }
    expect(await listed("invoices")).toEqual([old.id, fresh.id]);
    // Provisioning the name gives the key that holds it: the new one.
    expect((await provision("invoices")).id).toBe(fresh.id);

    time.set(new Date(graceEnd.getTime() - SECOND));
    expect(await selfStatus(peer, old.keyId)).toBe(200);
    time.set(graceEnd);
    for (const on of [svc, peer]) {
      expect(await selfStatus(on, old.keyId)).toBe(401);
      expect(await selfStatus(on, fresh.keyId)).toBe(200);
    }
    expect(await listed("invoices")).toEqual([fresh.id]);
  });

  it("answers 409 for a key already replaced, and changes nothing", async () => {
    const old = await provision("twice");
    const fresh = await rotate(`${domainKeys()}/${old.id}/rotate`, { gracePeriodSeconds: 60 });
    const again = await root.post(`${domainKeys()}/${old.id}/rotate`, { gracePeriodSeconds: 60 });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ status: 409, error: "conflict", message: expect.stringContaining(String(fresh.id)) });
    expect(await listed("twice")).toEqual([old.id, fresh.id]);
    // The successor itself may be rotated in turn.
    const third = await rotate(`${domainKeys()}/${fresh.id}/rotate`);
    expect(await listed("twice")).toEqual([old.id, third.id]);
  });

  it("makes exactly one successor of 50 concurrent rotations of one key, across two processes", async () => {
    const old = await provision("contested");
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? peer : svc).as(acme.keys.customer).post(`/keys/${old.id}/rotate`, { gracePeriodSeconds: 600 })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, ...Array(49).fill(409)]);
    const winner = answers.find((a) => a.status === 200)!.body as Key;
    const keys = (await root.get(`${domainKeys()}?name=contested`)).body as Key[];
    expect(keys.map((k) => k.id)).toEqual([old.id, winner.id]);
    const events = (await root.get(`/keys/${old.id}/events`)).body as { action: string }[];
    expect(events.map((e) => e.action)).toEqual(["created", "rotated"]);
  });

  it("stops the old key on the other process within a second when there is no grace", async () => {
    const old = await provision("cross");
    expect(await selfStatus(peer, old.keyId)).toBe(200);
    const fresh = await rotate(`/keys/${old.id}/rotate`);
    await expect.poll(() => selfStatus(peer, old.keyId), { timeout: 1_000, interval: 20 }).toBe(401);
    expect(await selfStatus(peer, fresh.keyId)).toBe(200);
  });

  it("rotates the calling key itself through /keys/self/rotate", async () => {
    const old = await provision("self-rotating");
    const fresh = await rotate("/keys/self/rotate", { gracePeriodSeconds: 30, expiresIn: 86_400 }, svc.as(old.keyId));
    expect(fresh).toMatchObject({ name: "self-rotating", domainId: acme.domainIds[0], expiresAt: new Date(time.now().getTime() + 86_400 * SECOND).toISOString() });
    expect((await svc.as(old.keyId).get("/keys/self")).body).toMatchObject({ replacedBy: fresh.id });
    expect((await svc.as(old.keyId).post("/apikeys/self/rotate")).status).toBe(409);
  });

  it("never lengthens the old key's life: an expiry before the grace period's end stays", async () => {
    const old = await provision("expiring", { expiresIn: 120 });
    await rotate(`/keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 });
    expect((await root.get(`/keys/${old.id}`)).body).toMatchObject({ expiresAt: old.expiresAt });
  });

  it("rotates a user's key into a user's key of the same user", async () => {
    const user = (await root.get(`/keys/${acme.keys.domainUser}`)).body as Key;
    const fresh = await rotate(`/keys/${user.id}/rotate`, { gracePeriodSeconds: 60 });
    expect(fresh).toMatchObject({ type: "user", userId: user.userId, name: user.name, domainId: user.domainId });
    expect(await selfStatus(svc, fresh.keyId)).toBe(200);
  });

  it("is for whoever may PUT the key: a key outside the path or the caller's scope is 404, an unknown path 401", async () => {
    const theirs = (await svc.as(acme.keys.otherDomain).post("/keys", { name: "theirs" })).body as Key;
    const domainKey = svc.as(acme.keys.domain);
    const refused = await domainKey.post(`/keys/${theirs.id}/rotate`);
    expect(refused.status).toBe(404);
    expect((await domainKey.post(`/customers/acme/keys/${theirs.id}/rotate`)).status).toBe(401);
    expect(await selfStatus(svc, theirs.keyId)).toBe(200);
  });

  it("refuses a grace period or expiry out of range, and leaves the key as it was", async () => {
    const key = await provision("strict");
    const later = new Date(time.now().getTime() + 3600 * SECOND).toISOString();
    for (const body of [
      { gracePeriodSeconds: -1 }, { gracePeriodSeconds: 2_592_001 }, { gracePeriodSeconds: 1.5 }, { gracePeriodSeconds: "60" },
      { gracePeriodSeconds: null }, { expiresIn: 30 }, { expiresAt: "soon" }, { expiresAt: time.now().toISOString() },
      { expiresAt: later, expiresIn: 3600 },
    ]) {
      const res = await root.post(`/keys/${key.id}/rotate`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ status: 400, error: "bad_request", message: expect.any(String) });
    }
    expect((await rotate(`/keys/${key.id}/rotate`, { gracePeriodSeconds: 2_592_000 })).name).toBe("strict");
  });
});
