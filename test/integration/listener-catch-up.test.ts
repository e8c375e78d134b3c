// The listener catches up from the key event log whenever it (re)connects (docs/adr/0014): a change
// made while a process was not listening is in force on it within a second of its reconnection,
// although its announcement died with the connection. Through a TCP proxy of the test's own in front
// of one process's database; the changes are made through another process, or by a transaction of the
// test's own held open so that it commits after one with a larger event id.
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { CatchUp, ListenState } from "../../src/store/database.ts";
import { keyCatchUp, keyLogRead } from "../../src/store/keys/key-catch-up.ts";
import { keyChannel } from "../../src/store/keys/key-changes.ts";
import { recordEvents } from "../../src/store/keys/key-events.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { backends } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { createTenant } from "../support/world.ts";

const server = inject("postgresUrl");
/** The promise checked: every change in force within this of the reconnection. */
const WITHIN_MS = 1_000;
/** The listener's check, and how soon it tries again once lost. */
const CHECK_MS = 100;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function started(backend: "pglite" | "postgres"): Promise<{ svc: TestService; root: string; keys: { id: number; keyId: string }[] }> {
  const svc = await startService(backend);
  cleanups.push(() => svc.stop());
  const root = (await createTenant(svc, "acme")).keys.customer;
  const keys: { id: number; keyId: string }[] = [];
  for (let i = 0; i < 4; i++) keys.push((await svc.as(root).post("/keys", { name: `k${i}` })).body as { id: number; keyId: string });
  return { svc, root, keys };
}

async function proxyTo(url: string): Promise<TcpProxy> {
  const target = new URL(url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  cleanups.push(() => proxy.close());
  return proxy;
}

/** Counts something the listener does; `reach(n)` resolves once it has happened n times. */
function counter() {
  let n = 0;
  const waiters = new Set<{ at: number; resolve: () => void }>();
  return {
    get n() {
      return n;
    },
    poke() {
      n++;
      for (const w of waiters) {
        if (n < w.at) continue;
        waiters.delete(w);
        w.resolve();
      }
    },
    reach(at: number, what: string, timeoutMs = 10_000): Promise<void> {
      if (n >= at) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter = { at, resolve: () => (clearTimeout(timer), resolve()) };
        const timer = setTimeout(() => (waiters.delete(waiter), reject(new Error(`${what}: ${n} of ${at}`))), timeoutMs);
        waiters.add(waiter);
      });
    },
  };
}

describe.each(backends())("the key event log's read (%s)", (backend) => {
  it("gives the snapshot's bounds and largest id, the changes after an id or among those named, which of those named it shows, and the ids it does not", { timeout: 60_000 }, async () => {
    const { svc, root, keys } = await started(backend);
    const { db } = svc.database;
    const start = await keyLogRead(db, null, [], 10);
    expect(start).toMatchObject({ changes: [], holes: [], present: [], imported: false });
    expect(start.xmin <= start.xmax).toBe(true);
    // An event id taken by a transaction that rolls back is never shown: a hole.
    await expect(db.transaction(async (tx) => {
      await tx.query("UPDATE api_keys SET active = false WHERE id = $1", [keys[1]!.id]);
      await tx.query(`INSERT INTO key_events (at, action, key_id, key_name, key_type, tenant_id, actor, changes)
                      SELECT now(), 'updated', id, name, type, tenant_id, '{"type":"admin"}', '{}' FROM api_keys WHERE id = $1`, [keys[1]!.id]);
      throw new Error("rolled back");
    })).rejects.toThrow("rolled back");
    expect((await svc.as(root).put(`/keys/${keys[0]!.id}`, { active: false })).status).toBe(200);
    const after = await keyLogRead(db, start.last, [start.last - 1], 10);
    expect(after.last).toBe(start.last + 2);
    expect(after.changes.map((e) => [e.event, e.change.id])).toEqual([[start.last + 2, keys[0]!.id]]);
    expect(after.holes).toEqual([[start.last + 1, start.last + 1]]);
    expect(after.present).toEqual([start.last - 1]); // k2's creation: shown, and no change
    expect(after.imported).toBe(false);
  });
});

describe.skipIf(!server)("a listener cut while keys change, then reconnected (PostgreSQL; skipped without a server)", () => {
  it(
    "delivers every change it missed before it says it listens again, and one whose transaction took a smaller id but committed later once that commits",
    { timeout: 60_000 },
    async () => {
      const { svc, root, keys } = await started("postgres");
      const [k0, k1, k2, k3] = keys as [{ id: number; keyId: string }, ...{ id: number; keyId: string }[]];
      const url = svc.database.url!;
      const proxy = await proxyTo(url);
      const db = openPostgres({ connectionString: proxy.urlFor(url), log: captureLogger([]), timeoutMs: 1_000, listenCheckMs: CHECK_MS });
      cleanups.push(() => db.close());

      // What the catch-up delivers, apart from the announcements, and when; the listener's states in order.
      const caught: { id: number; at: number }[] = [];
      const states: { state: ListenState | "caught"; id?: number }[] = [];
      let missed = 0;
      const reads = counter();
      const lost = counter();
      const restored = counter();
      const inner = keyCatchUp(
        (change) => (caught.push({ id: change.id, at: performance.now() }), states.push({ state: "caught", id: change.id })),
        () => missed++,
      );
      // Read at every check, as if always wanted: the reads are this test's clock (an idle listener reads only when told to).
      const catchUp: CatchUp = { read: async (q) => (await inner.read(q), reads.poke()), lost: () => inner.lost(), wanted: () => true };
      const unlisten = await db.listen(keyChannel(() => undefined, () => undefined), (state) => (states.push({ state }), (state === "lost" ? lost : restored).poke()), catchUp);
      cleanups.push(unlisten);
      await reads.reach(3, "checks before the cut");

      proxy.cut();
      await lost.reach(1, "lost");
      // A transaction of the test's own takes the next event id for k0 and stays open.
      const held = new pg.Client({ connectionString: url });
      await held.connect();
      cleanups.push(() => held.end());
      await held.query("BEGIN");
      await held.query(
        `WITH changed AS (UPDATE api_keys SET active = false WHERE id = $1 RETURNING *) ${recordEvents("changed", "updated", { at: "now()", actor: `'{"type":"admin"}'`, changes: `'{"active":[true,false]}'`, requestId: "NULL" })}`,
        [k0.id],
      );
      // Meanwhile, through the other process: a disable, a deletion and a rotation (its old key expires at once).
      expect((await svc.as(root).put(`/keys/${k1!.id}`, { active: false })).status).toBe(200);
      expect((await svc.as(root).delete(`/keys/${k2!.id}`)).status).toBe(204);
      expect((await svc.as(root).post(`/keys/${k3!.id}/rotate`, {})).status).toBe(200);

      const restoredAt = performance.now();
      proxy.restore();
      await restored.reach(1, "restored");
      const firstRestored = states.findIndex((s) => s.state === "restored");
      const before = states.slice(0, firstRestored).filter((s) => s.state === "caught").map((s) => s.id);
      expect(before.sort(), "delivered before listening was reported restored").toEqual([k1!.id, k2!.id, k3!.id].sort());
      for (const c of caught) expect(c.at - restoredAt).toBeLessThan(WITHIN_MS);
      expect(caught.map((c) => c.id)).not.toContain(k0.id);

      // Cut again; the held transaction commits while nobody listens (its announcement is lost), with an
      // id below those already delivered.
      await reads.reach(reads.n + 2, "checks before the second cut");
      proxy.cut();
      await lost.reach(2, "lost again");
      await held.query("COMMIT");
      const againAt = performance.now();
      proxy.restore();
      await restored.reach(2, "restored again");
      const k0Caught = caught.find((c) => c.id === k0.id);
      expect(k0Caught, "the change committed later with a smaller id").toBeDefined();
      expect(k0Caught!.at - againAt).toBeLessThan(WITHIN_MS);
      expect(missed).toBe(0);
    },
  );

  it("a process whose database was cut while keys changed refuses each changed key within a second of its return", { timeout: 60_000 }, async () => {
    const { svc, root, keys } = await started("postgres");
    const url = svc.database.url!;
    const proxy = await proxyTo(url);
    const db = openPostgres({ connectionString: proxy.urlFor(url), log: captureLogger([]), timeoutMs: 1_000 });
    const b = await startService("postgres", { database: { db, url, drop: () => db.close() }, masterKey: svc.masterKey, adminToken: svc.adminToken });
    cleanups.push(() => b.stop());
    const [k0, k1, k2, kept] = keys as [{ id: number; keyId: string }, ...{ id: number; keyId: string }[]];
    for (const k of keys) expect((await b.as(k.keyId).get("/keys/self")).status).toBe(200);

    proxy.cut();
    expect((await svc.as(root).put(`/keys/${k0.id}`, { active: false })).status).toBe(200);
    expect((await svc.as(root).delete(`/keys/${k1!.id}`)).status).toBe(204);
    expect((await svc.as(root).post(`/keys/${k2!.id}/rotate`, {})).status).toBe(200);
    // Cut off, it answers its cached keys from the stale window (docs/api.md), the changed ones included.
    expect((await b.as(k0.keyId).get("/keys/self")).status).toBe(200);

    const restoredAt = performance.now();
    proxy.restore();
    const refusedAfter: number[] = [];
    for (const k of [k0, k1!, k2!]) {
      for (;;) {
        const status = (await b.as(k.keyId).get("/keys/self")).status;
        if (status === 401) break;
        expect([200, 503]).toContain(status);
        if (performance.now() - restoredAt > 5_000) throw new Error(`key ${k.id} still answers ${status}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      refusedAfter.push(performance.now() - restoredAt);
    }
    console.log(`[catch-up] changed keys refused ${refusedAfter.map((ms) => `${Math.round(ms)} ms`).join(", ")} after the database came back`);
    for (const ms of refusedAfter) expect(ms).toBeLessThan(WITHIN_MS);
    expect((await b.as(kept!.keyId).get("/keys/self")).status).toBe(200);
  });
});

describe.skipIf(!server)("an idle listener (PostgreSQL; skipped without a server)", () => {
  it("reads the log only after an announcement, and checks its connection without a statement (docs/scaling.md, \"What an idle process costs\")", { timeout: 30_000 }, async () => {
    const { svc, root, keys } = await started("postgres");
    const logs: string[] = [];
    const db = openPostgres({ connectionString: svc.database.url!, log: captureLogger(logs), timeoutMs: 1_000, listenCheckMs: CHECK_MS });
    cleanups.push(() => db.close());
    const reads = counter();
    const changes = counter();
    const inner = keyCatchUp(() => changes.poke(), () => undefined);
    const catchUp: CatchUp = { read: async (q) => (await inner.read(q), reads.poke()), lost: () => inner.lost(), wanted: () => inner.wanted() };
    const unlisten = await db.listen(keyChannel(() => changes.poke(), () => undefined), undefined, catchUp);
    cleanups.push(unlisten);
    // The first read, and those until the cursor has a floor: the first, on a quiet server; a few more
    // while other work on the server (another test file) holds transactions open.
    for (let waited = 0; inner.wanted() && waited < 5_000; waited += CHECK_MS) await new Promise((resolve) => setTimeout(resolve, CHECK_MS));
    expect(inner.wanted()).toBe(false);
    const settled = reads.n;
    // Twenty checks with nothing announced: no read, and the connection is still heard.
    await new Promise((resolve) => setTimeout(resolve, CHECK_MS * 20));
    expect(reads.n).toBe(settled);
    expect((await svc.as(root).put(`/keys/${keys[0]!.id}`, { active: false })).status).toBe(200);
    await reads.reach(settled + 1, "a read after the announcement", 5_000);
    await changes.reach(2, "announced, then read");
    expect(logs.filter((line) => line.includes("notification connection lost"))).toEqual([]);
  });
});
