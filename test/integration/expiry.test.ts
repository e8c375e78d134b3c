import { beforeAll, describe, expect, it } from "vitest";
import { sweepExpiries } from "../../src/services/keys/expiry-sweep.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import type { TestService } from "../support/service.ts";
import { useTwoProcesses, type Tenant, type TwoProcesses } from "../support/world.ts";

// Expiry (docs/api.md, "Lifecycle"), at the boundary, with a clock the test moves: a key works until
// the instant of its expiresAt and is refused, and gone, from then on, on every process, with no sweep
// and no notification needed; its name is free again at once.
type Key = { id: number; keyId: string; name: string; expiresAt: string | null; [k: string]: unknown };
const SECOND = 1000;

describe.each(backends())("expiry on %s", (backend) => {
  const time = fakeClock();
  const processes = useTwoProcesses(backend, time);
  let svc: TestService, peer: TestService, acme: Tenant, root: TwoProcesses["root"];
  beforeAll(() => ({ svc, peer, acme, root } = processes()));

  const provision = async (body: object, path = "/customers/acme/keys") => {
    const res = await root.post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Key;
  };
  const selfStatus = async (on: TestService, token: string) => (await on.as(token).get("/keys/self")).status;
  const listed = async (name: string) => ((await root.get(`/customers/acme/keys?name=${name}`)).body as Key[]).map((k) => k.id);

  it("works until the second before its expiry, and from its expiry on is refused and gone, on both processes", async () => {
    const key = await provision({ name: "short-lived", expiresIn: 60 });
    const expiresAt = new Date(time.now().getTime() + 60 * SECOND);
    expect(key.expiresAt).toBe(expiresAt.toISOString());
    // Both processes cache the key now.
    expect(await selfStatus(svc, key.keyId)).toBe(200);
    expect(await selfStatus(peer, key.keyId)).toBe(200);

    time.set(new Date(expiresAt.getTime() - SECOND));
    expect(await selfStatus(svc, key.keyId)).toBe(200);
    expect(await selfStatus(peer, key.keyId)).toBe(200);
    expect(await listed("short-lived")).toEqual([key.id]);
    expect((await root.get(`/keys/${key.id}`)).status).toBe(200);

    time.set(expiresAt);
    const peerQueries = peer.ctx.keyCache.stats().queries;
    expect(await selfStatus(svc, key.keyId)).toBe(401);
    expect(await selfStatus(peer, key.keyId)).toBe(401);
    // The peer refused from its cache: nothing told it, nothing was looked up again.
    expect(peer.ctx.keyCache.stats().queries).toBe(peerQueries);

    time.set(new Date(expiresAt.getTime() + SECOND));
    expect(await selfStatus(peer, key.keyId)).toBe(401);
    expect(await listed("short-lived")).toEqual([]);
    for (const ref of [key.id, key.keyId]) {
      expect((await root.get(`/keys/${ref}`)).status).toBe(404);
      expect((await root.put(`/keys/${ref}`, { active: false })).status).toBe(404);
    }
  });

  it("frees its name at once: provisioning it makes a new key, though no sweep has run", async () => {
    const old = await provision({ name: "reborn", expiresAt: new Date(time.now().getTime() + 120 * SECOND).toISOString() });
    time.advance(120 * SECOND);
    const fresh = await provision({ name: "reborn" });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.keyId).not.toBe(old.keyId);
    expect(fresh.expiresAt).toBeNull();
    expect(await provision({ name: "reborn" })).toMatchObject({ id: fresh.id });
    expect(await listed("reborn")).toEqual([fresh.id]);
    // Making room recorded the old key's expiry.
    const events = (await root.get(`/keys/${old.id}/events`)).body as { action: string; at: string; actor: object }[];
    expect(events.map((e) => e.action)).toEqual(["created", "expired"]);
    expect(events[1]).toMatchObject({ at: old.expiresAt, actor: { type: "system" } });
  });

  it("frees its name for a rename too", async () => {
    const old = await provision({ name: "wanted", expiresIn: 60 });
    const other = await provision({ name: "renamer" });
    time.advance(61 * SECOND);
    const renamed = await root.put(`/keys/${other.id}`, { name: "wanted" });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(await listed("wanted")).toEqual([other.id]);
    expect(old.id).not.toBe(other.id);
  });

  it("lets exactly one of many concurrent provisionings of an expired key's name make the new key", async () => {
    const old = await provision({ name: "contested", expiresIn: 60 });
    time.advance(60 * SECOND);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : svc).as(acme.keys.customer).post("/customers/acme/keys", { name: "contested" })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const ids = new Set(answers.map((a) => (a.body as Key).id));
    expect(ids.size).toBe(1);
    expect(ids.has(old.id)).toBe(false);
    expect(await listed("contested")).toEqual([...ids]);
    const events = (await root.get(`/keys/${old.id}/events`)).body as { action: string }[];
    expect(events.map((e) => e.action)).toEqual(["created", "expired"]);
  });

  it("keeps its own expiry when provisioned again, whatever the request says", async () => {
    const first = await provision({ name: "kept", expiresIn: 600 });
    const again = await provision({ name: "kept", expiresIn: 3600 });
    expect(again).toMatchObject({ id: first.id, expiresAt: first.expiresAt });
  });

  it("is set, moved and removed by PUT, and a past time is refused", async () => {
    const key = await provision({ name: "adjustable" });
    const at = new Date(time.now().getTime() + 3600 * SECOND).toISOString();
    expect((await root.put(`/keys/${key.id}`, { expiresAt: at })).body).toMatchObject({ expiresAt: at });
    const offset = "2027-01-01T12:00:00+02:00";
    expect((await root.put(`/keys/${key.id}`, { expiresAt: offset })).body).toMatchObject({ expiresAt: "2027-01-01T10:00:00.000Z" });
    expect((await root.put(`/keys/${key.id}`, { expiresAt: null })).body).toMatchObject({ expiresAt: null });
    for (const expiresAt of [time.now().toISOString(), new Date(time.now().getTime() - SECOND).toISOString()]) {
      const res = await root.put(`/keys/${key.id}`, { expiresAt });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, error: "bad_request", message: expect.stringMatching(/expiresAt/) });
    }
    expect((await root.get(`/keys/${key.id}`)).body).toMatchObject({ expiresAt: null });
    // Expiring a key through PUT stops it as surely: on the peer too, within the second.
    const soon = new Date(time.now().getTime() + 60 * SECOND);
    expect(await selfStatus(peer, key.keyId)).toBe(200);
    await root.put(`/keys/${key.id}`, { expiresAt: soon.toISOString() });
    time.set(soon);
    await expect.poll(() => selfStatus(peer, key.keyId), { timeout: 1_000 }).toBe(401);
  });

  it("is recorded by the sweep, once, however many processes sweep at once", async () => {
    const keys = await Promise.all(["swept-1", "swept-2", "swept-3"].map((name) => provision({ name, expiresIn: 60 })));
    time.advance(61 * SECOND);
    const recorded = await Promise.all([sweepExpiries(svc.ctx), sweepExpiries(peer.ctx), sweepExpiries(svc.ctx)]);
    expect(recorded.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(keys.length);
    expect(await sweepExpiries(svc.ctx)).toBe(0);
    for (const key of keys) {
      const events = (await root.get(`/keys/${key.id}/events`)).body as { action: string; at: string }[];
      expect(events.map((e) => e.action)).toEqual(["created", "expired"]);
      expect(events[1]!.at).toBe(key.expiresAt);
    }
  });

  it("is recorded before an admin deletion takes the key with its customer; live keys get their deleted event", async () => {
    await svc.admin.post("/admin/customers", { name: "doomed" });
    const owner = (await svc.admin.post("/admin/customers/doomed/keys", { name: "owner" })).body as Key;
    const expired = (await svc.as(owner.keyId).post("/keys", { name: "lapsed", expiresIn: 60 })).body as Key;
    time.advance(61 * SECOND);
    expect((await svc.admin.delete("/admin/customers/doomed")).status).toBe(204);
    const events = (await svc.admin.get("/admin/events?limit=1000")).body as { action: string; key: { id: number }; actor: { type: string } }[];
    const of = (id: number) => events.filter((e) => e.key.id === id).map((e) => `${e.action} by ${e.actor.type}`).reverse();
    expect(of(expired.id)).toEqual(["created by key", "expired by system"]);
    expect(of(owner.id)).toEqual(["created by admin", "deleted by admin"]);
  });

  it("refuses an expiry that is not in the future, not a time, or given twice", async () => {
    const now = time.now().getTime();
    for (const body of [
      { name: "bad", expiresAt: new Date(now - SECOND).toISOString() },
      { name: "bad", expiresAt: new Date(now).toISOString() },
      { name: "bad", expiresAt: "tomorrow" },
      { name: "bad", expiresAt: "2027-01-01" },
      { name: "bad", expiresAt: "2027-01-01T00:00:00" },
      { name: "bad", expiresAt: 1798761600 },
      { name: "bad", expiresIn: 59 },
      { name: "bad", expiresIn: 315_360_001 },
      { name: "bad", expiresIn: 60.5 },
      { name: "bad", expiresIn: "60" },
      { name: "bad", expiresIn: 600, expiresAt: new Date(now + 3600 * SECOND).toISOString() },
    ]) {
      const res = await root.post("/customers/acme/keys", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body, JSON.stringify(body)).toEqual({ status: 400, error: "bad_request", message: expect.stringMatching(/expires(At|In)/) });
    }
    expect(await listed("bad")).toEqual([]);
  });
});
