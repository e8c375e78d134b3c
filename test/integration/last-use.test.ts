import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate } from "../../src/services/verification/authenticate.ts";
import type { Database } from "../../src/store/database.ts";
import { fakeClock } from "../support/clock.ts";
import { backends, openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { captureLogger, startPeer, startService, type TestService } from "../support/service.ts";

// lastUsedAt (docs/api.md, "Lifecycle"): authentication adds no database work; each process writes
// the uses it saw in one statement a minute, and at shutdown; an unused key costs nothing.

/** The database's transactions as keyplane opens them: each statement outside a transaction is one. */
function counted(test: TestDatabase) {
  const counts = { transactions: 0, lastUseWrites: 0 };
  const db: Database = {
    ...test.db,
    query(text, params) {
      counts.transactions++;
      if (/SET last_used_at/.test(text)) counts.lastUseWrites++;
      return test.db.query(text, params);
    },
    transaction(work) {
      counts.transactions++;
      return test.db.transaction(work);
    },
  };
  return { database: { ...test, db }, counts };
}

type Key = { id: number; keyId: string; lastUsedAt: string | null };
const SECOND = 1000;
/** A GET /keys/self from this machine, as authentication takes it. */
const LOCAL = { client: "127.0.0.1", referrer: undefined, method: "GET", path: "/keys/self" };

describe.each(backends())("last use on %s", (backend) => {
  const time = fakeClock("2026-11-23T10:00:00.000Z");
  let svc: TestService;
  let counts: { transactions: number; lastUseWrites: number };
  let root: string;
  /** The database itself, for the test's own reads, which are not counted. */
  let raw: Database;

  beforeAll(async () => {
    const test = await openTestDatabase(backend, captureLogger([]));
    raw = test.db;
    const c = counted(test);
    counts = c.counts;
    // Flushes happen when the test says, at each minute of its clock.
    svc = await startService(backend, { clock: time.clock, database: c.database, lastUseFlushMs: 3_600_000, expirySweepMs: 3_600_000 });
    await svc.admin.post("/admin/customers", { name: "acme" });
    root = ((await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as Key).keyId;
  });
  afterAll(() => svc?.stop());

  const provision = async (name: string) => (await svc.as(root).post("/keys", { name })).body as Key;
  const stored = async (id: number) =>
    (await raw.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [id]))[0]!.last_used_at;

  it("10,000 authentications of one key over 100 s: no database work per request, one write a minute, and lastUsedAt moves", async () => {
    const key = await provision("busy");
    await svc.ctx.lastUse.flush();
    time.set("2026-11-23T10:10:00.000Z");
    const start = { ...counts };
    let minute = Math.floor(time.now().getTime() / 60_000);
    const writes: Date[] = [];
    let lastAuthenticated = time.now();
    for (let i = 0; i < 10_000; i++) {
      lastAuthenticated = time.now();
      await authenticate(svc.ctx, `Bearer ${key.keyId}`, LOCAL);
      time.advance(10);
      const now = Math.floor(time.now().getTime() / 60_000);
      if (now !== minute) {
        minute = now;
        await svc.ctx.lastUse.flush();
        writes.push(lastAuthenticated);
        expect(await stored(key.id)).toEqual(lastAuthenticated);
      }
    }
    await svc.ctx.lastUse.flush();
    writes.push(lastAuthenticated);
    expect(await stored(key.id)).toEqual(lastAuthenticated);
    expect(lastAuthenticated.toISOString()).toBe("2026-11-23T10:11:39.990Z");

    // Two minutes began, so two writes; and besides them only the look-up that filled the cache.
    expect(counts.lastUseWrites - start.lastUseWrites).toBe(2);
    expect(counts.transactions - start.transactions).toBe(2 + 1);
    const shown = (await svc.as(root).get(`/keys/${key.id}`)).body as Key;
    expect(shown.lastUsedAt).toBe("2026-11-23T10:11:39.990Z");
    expect(((await svc.as(key.keyId).get("/keys/self")).body as Key).lastUsedAt).toBe("2026-11-23T10:11:39.990Z");
  });

  it("writes the uses of many keys in one statement, and nothing for keys not used", async () => {
    const used = await Promise.all(["a", "b", "c"].map(provision));
    const idle = await provision("idle");
    await svc.ctx.lastUse.flush();
    const before = { ...counts };
    await svc.ctx.lastUse.flush();
    expect(counts.transactions - before.transactions).toBe(0);
    for (const key of used) await authenticate(svc.ctx, `Bearer ${key.keyId}`, LOCAL);
    await svc.ctx.lastUse.flush();
    expect(counts.lastUseWrites - before.lastUseWrites).toBe(1);
    for (const key of used) expect(await stored(key.id)).toEqual(time.now());
    expect(await stored(idle.id)).toBeNull();
  });

  it("never moves a key's lastUsedAt back: a process with an older use does not overwrite a newer one", async () => {
    const key = await provision("two-processes");
    const peer = await startPeer(svc, { clock: time.clock, lastUseFlushMs: 3_600_000 });
    try {
      const early = time.now();
      await authenticate(peer.ctx, `Bearer ${key.keyId}`, LOCAL);
      time.advance(30 * SECOND);
      await authenticate(svc.ctx, `Bearer ${key.keyId}`, LOCAL);
      await svc.ctx.lastUse.flush();
      await peer.ctx.lastUse.flush();
      expect(await stored(key.id)).toEqual(new Date(early.getTime() + 30 * SECOND));
    } finally {
      await peer.stop();
    }
  });

  it("is written when a process stops", async () => {
    const key = await provision("at-shutdown");
    const peer = await startPeer(svc, { clock: time.clock, lastUseFlushMs: 3_600_000 });
    await authenticate(peer.ctx, `Bearer ${key.keyId}`, LOCAL);
    expect(await stored(key.id)).toBeNull();
    await peer.stop();
    expect(await stored(key.id)).toEqual(time.now());
  });

  it("is written every flush interval without being asked", async () => {
    const key = await provision("on-its-own");
    const peer = await startPeer(svc, { clock: time.clock, lastUseFlushMs: 50 });
    try {
      expect((await peer.as(key.keyId).get("/keys/self")).status).toBe(200);
      await expect.poll(() => stored(key.id), { timeout: 5_000 }).toEqual(time.now());
    } finally {
      await peer.stop();
    }
  });

  it("is not touched by a refused authentication", async () => {
    const key = await provision("disabled");
    await svc.as(root).put(`/keys/${key.id}`, { active: false });
    await expect(authenticate(svc.ctx, `Bearer ${key.keyId}`, LOCAL)).rejects.toMatchObject({ code: "unauthorized" });
    await svc.ctx.lastUse.flush();
    expect(await stored(key.id)).toBeNull();
  });
});
