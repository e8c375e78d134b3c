// PostgreSQL ending keyplane's sessions under load (docs/api.md, "When the database cannot be
// reached"): a restart, a stop and a start, the sessions terminated one by one (pooled, checked out in
// a transaction, in the middle of a statement, the listener), and idle sessions ended by
// idle_session_timeout. Two real keyplane processes on a PostgreSQL 15 cluster of the test's own
// (test/support/pg-cluster.ts); neither may exit, nor answer 500; meanwhile cached keys verify and the
// rest answers 503 `unavailable`; every acknowledged write is in the database afterwards; and within a
// second of the database's return every answer is as before, and revocation reaches the other process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailable } from "../../src/domain/errors.ts";
import type { Database } from "../../src/store/database.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { clusterUnavailable, startCluster, type PgCluster } from "../support/pg-cluster.ts";
import { describeNeeding } from "../support/needs.ts";
import { answersWith, call, expectAlive, expectOnlyAllowed, hold, neverSeen, startReplicas, type Replica as Process, type ReplicaSet } from "../support/replicas.ts";
import { captureLogger } from "../support/service.ts";
import { startTraffic, statusesOf, type Traffic } from "../support/traffic.ts";

/** KEYPLANE_DATABASE_TIMEOUT_MS of both processes. */
const TIMEOUT_MS = 1_000;
/** How long the database stays stopped between stop and start. */
const STOPPED_MS = 2_000;
/** Load before each fault, so that every kind of request is under way when it comes. */
const WARM_WRITES = 10;
/** The promise checked: back to normal, and revocation across processes, within this of the return. */
const BACK_WITHIN_MS = 1_000;
/** Between two terminations of keyplane's sessions. */
const TERMINATE_GAP_MS = 50;
/** How long the test hunts for a session caught inside a transaction, or inside a statement. */
const CATCH_WITHIN_MS = 5_000;
/** The server's idle_session_timeout in that scenario, and how long the load pauses so that it ends every idle pooled session. */
const IDLE_SESSION_TIMEOUT_MS = 400;
const IDLE_PAUSE_MS = 1_000;
/** When the server ends the pool's idle session; this process is held until well after, so that the goodbye waits unread. */
const END_IN_MS = 50;
const HELD_MS = 250;

type Kind = "cached" | "verified" | "forwarded" | "unknown" | "list" | "provision1" | "provision2" | "provision3" | "put" | "delete";
const KINDS: Kind[] = ["cached", "verified", "forwarded", "unknown", "list", "provision1", "provision2", "provision3", "put", "delete"];
const WRITES: Kind[] = ["provision1", "provision2", "provision3", "put", "delete"];
/** What each kind answers while the database answers; 503 is the only other answer allowed, and not for a cached key. */
const NORMAL: Record<Kind, number[]> = {
  cached: [200], verified: [200], forwarded: [200], unknown: [401], list: [200],
  provision1: [200, 201], provision2: [200, 201], provision3: [200, 201], put: [200], delete: [204],
};
const CACHED: Kind[] = ["cached", "verified", "forwarded"];

/** Every answer allowed: the normal one or 503, a cached key always 200; nothing else, ever. */
const ALLOWED = Object.fromEntries(KINDS.map((kind) => [kind, CACHED.includes(kind) ? NORMAL[kind] : [...NORMAL[kind], 503]])) as Record<Kind, number[]>;

/** One keyplane process, what it was asked, and what it acknowledged. */
interface Replica extends Process {
  /** Keys provisioned (answered 200/201), by id and name; deleted ones are left in too. */
  provisioned: { id: number; name: string }[];
  /** Provisioned keys not yet asked to be deleted. */
  victims: number[];
  deleted: number[];
  renamed: string[];
  putTarget: number;
}

describeNeeding(clusterUnavailable(), "keyplane survives PostgreSQL ending its sessions", () => {
  let cluster: PgCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.destroy();
  });

  describe("two keyplane processes under load", () => twoProcesses(() => cluster));
  describe("a pooled connection the server ended while it sat idle in the pool", () => staleConnection(() => cluster));
});

function twoProcesses(clusterOf: () => PgCluster): void {
  let cluster: PgCluster;
  let set: ReplicaSet;
  let replicas: Replica[] = [];
  let root = "";
  let cachedKey = "";
  let provisionCount = 0;

  beforeAll(async () => {
    cluster = clusterOf();
    // The forwarded load asks /auth as Envoy does, the original path after /auth.
    set = await startReplicas(cluster.url(), ["A", "B"], { KEYPLANE_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS), KEYPLANE_AUTH_GATEWAY: "envoy" });
    replicas = set.replicas.map((r) => ({ ...r, provisioned: [], victims: [], deleted: [], renamed: [], putTarget: 0 }));
    root = await set.customerWithRoot("acme");
    cachedKey = (await provision(replicas[0]!, "cached")).keyId;
    for (const r of replicas) r.putTarget = (await provision(r, `put-target-${r.name}`)).id;
    // Both processes have seen the cached key and the root key valid: they verify through an outage.
    for (const r of replicas) for (const token of [cachedKey, root]) expect((await call(r.p.url, "GET", "/keys/self", token)).status).toBe(200);
  }, 60_000);

  afterAll(() => set?.stop());

  async function provision(r: Replica, name: string): Promise<{ id: number; keyId: string }> {
    const made = await call(r.p.url, "POST", "/customers/self/keys", root, { name });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    return made.body as { id: number; keyId: string };
  }

  /** The twenty clients: ten on each process, each in a loop of its own. */
  function load(r: Replica): Traffic<Kind> {
    const url = r.p.url;
    const provisioning = async (kind: Kind) => {
      const name = `load-${r.name}-${provisionCount++}`;
      const a = await set.checked(`${r.name} ${kind}`, call(url, "POST", "/customers/self/keys", root, { name }));
      if (a.status === 200 || a.status === 201) {
        const id = (a.body as { id: number }).id;
        r.provisioned.push({ id, name });
        r.victims.push(id);
      }
      return a;
    };
    let renames = 0;
    return startTraffic<Kind>({
      cached: () => set.checked(`${r.name} cached`, call(url, "GET", "/keys/self", cachedKey)),
      verified: () => set.checked(`${r.name} verified`, call(url, "POST", "/verify", undefined, { key: cachedKey, path: "/calls", method: "GET" }), true),
      forwarded: () => set.checked(`${r.name} forwarded`, call(url, "GET", "/auth/calls", cachedKey)),
      unknown: () => set.checked(`${r.name} unknown`, call(url, "GET", "/keys/self", neverSeen())),
      list: () => set.checked(`${r.name} list`, call(url, "GET", "/customers/self/keys?limit=5", root)),
      provision1: () => provisioning("provision1"),
      provision2: () => provisioning("provision2"),
      provision3: () => provisioning("provision3"),
      put: async () => {
        const name = `renamed-${r.name}-${renames++}`;
        const a = await set.checked(`${r.name} put`, call(url, "PUT", `/customers/self/keys/${r.putTarget}`, root, { name }));
        if (a.status === 200) r.renamed.push(name);
        return a;
      },
      delete: async () => {
        // With no key of its own to delete yet, a key that does not exist: 204 all the same, nothing written.
        const id = r.victims.shift() ?? 2_000_000_000;
        const a = await set.checked(`${r.name} delete`, call(url, "DELETE", `/customers/self/keys/${id}`, root));
        if (a.status === 204 && id !== 2_000_000_000) r.deleted.push(id);
        return a;
      },
    });
  }

  /** The load on both processes, once each has acknowledged WARM_WRITES more keys. */
  async function loadBoth(): Promise<Traffic<Kind>[]> {
    const warm = replicas.map((r) => r.provisioned.length + WARM_WRITES);
    const traffic = replicas.map((r) => load(r));
    await Promise.all(traffic.map((t, i) => t.until(() => replicas[i]!.provisioned.length >= warm[i]!)));
    return traffic;
  }

  interface Back {
    /** When the last 503 was answered, from `from` (negative: before it). */
    last503: number;
    /** When the first write sent since `since` was acknowledged, from `from`. */
    firstWrite: number;
  }

  /**
   * After `from` (the database answering again, or the last session ended): when the answers of both
   * processes were as before again. Waits until each kind has answered normally to a request sent
   * BACK_WITHIN_MS after `from`, then stops the load.
   */
  async function settle(traffic: Traffic<Kind>[], from: number, since = from): Promise<Back> {
    const after = from + BACK_WITHIN_MS;
    await Promise.all(traffic.flatMap((t) => KINDS.map((kind) => t.until((s) => s.what === kind && s.sentAt >= after && NORMAL[kind].includes(s.status)))));
    await Promise.all(traffic.map((t) => t.stop()));
    const samples = traffic.flatMap((t) => t.samples);
    const last503 = Math.max(-Infinity, ...samples.filter((s) => s.status === 503).map((s) => s.answeredAt)) - from;
    const writes = samples.filter((s) => WRITES.includes(s.what) && s.sentAt >= since && NORMAL[s.what].includes(s.status));
    return { last503, firstWrite: Math.min(...writes.map((s) => s.answeredAt)) - from };
  }
  const ms = (n: number) => (Number.isFinite(n) ? `${Math.round(n)} ms` : "none");

  /** Every answer allowed (ALLOWED), every body what its status promises. */
  function expectOnlyAllowedAnswers(traffic: Traffic<Kind>[]): void {
    expectOnlyAllowed(replicas, traffic, ALLOWED);
    expect(set.wrong).toEqual([]);
  }

  /** During [from, to] the database was down: unknown tokens and writes 503 only, cached keys 200. */
  function expectOutageAnswers(traffic: Traffic<Kind>[], from: number, to: number): void {
    for (const [i, t] of traffic.entries()) {
      const during = (kinds: Kind[]) => statusesOf(kinds.flatMap((kind) => t.between(kind, from, to)));
      expect(during(CACHED), `${replicas[i]!.name}: cached keys during the outage`).toEqual([200]);
      expect(during(["unknown", "list"]), `${replicas[i]!.name}: unknown tokens and lists during the outage`).toEqual([503]);
      expect(during(WRITES), `${replicas[i]!.name}: writes during the outage`).toEqual([503]);
    }
  }

  async function expectAliveAndWritesKept(): Promise<void> {
    expectAlive(replicas);
    for (const r of replicas) {
      const names = r.provisioned.map((k) => k.name);
      const present = await cluster.admin<{ name: string }>("SELECT name FROM api_keys WHERE name = ANY($1)", [names]);
      expect(names.filter((n) => !present.some((row) => row.name === n)), `${r.name}: provisioned keys missing`).toEqual([]);
      const live = await cluster.admin<{ id: number }>("SELECT id FROM api_keys WHERE id = ANY($1) AND deleted_at IS NULL", [r.deleted]);
      expect(live.map((row) => row.id), `${r.name}: deleted keys still live`).toEqual([]);
      const renamed = await cluster.admin<{ key_name: string }>("SELECT key_name FROM key_events WHERE action = 'updated' AND key_id = $1", [r.putTarget]);
      expect(r.renamed.filter((n) => !renamed.some((row) => row.key_name === n)), `${r.name}: renames missing`).toEqual([]);
    }
  }

  /** Disables `key` through A (trying until A answers 200): how long until B refuses it, from A's answer. */
  async function revocationDelay(key: { id: number; keyId: string }): Promise<number> {
    const [a, b] = replicas as [Replica, Replica];
    let disabledAt: number;
    for (let tries = 0; ; tries++) {
      const put = await call(a.p.url, "PUT", `/customers/self/keys/${key.id}`, root, { active: false });
      disabledAt = performance.now();
      if (put.status === 200) break;
      if (put.status === 0) expectAlive(replicas);
      expect(put.status, "disabling the key").toBe(503);
      if (tries > 500) throw new Error("A never took the change");
      await hold(5);
    }
    return Math.max(0, (await answersWith(b, key.keyId, 401, 5_000)) - disabledAt);
  }

  /** Resolves once `r` has logged `line` more than `before` times (its stdout so far). */
  function logged(r: Replica, line: string, before: number, limitMs = 5_000): Promise<void> {
    const count = () => r.p.stdout().split(line).length - 1;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (count() <= before) return;
        clearTimeout(timer);
        r.p.child.stdout!.off("data", check);
        resolve();
      };
      const timer = setTimeout(() => {
        r.p.child.stdout!.off("data", check);
        reject(new Error(`${r.name} did not log "${line}"`));
      }, limitMs);
      r.p.child.stdout!.on("data", check);
      check();
    });
  }
  const restoredLine = "notification connection restored";
  const retried = () => replicas.reduce((n, r) => n + r.p.stdout().split("sent again").length - 1, 0);
  const restoredCount = (r: Replica) => r.p.stdout().split(restoredLine).length - 1;

  /** A key both processes have just seen valid, fresh in B's cache now that B listens again. */
  async function freshKeyOnBoth(name: string): Promise<{ id: number; keyId: string }> {
    expectAlive(replicas);
    const key = await provision(replicas[0]!, name);
    for (const r of replicas) await answersWith(r, key.keyId, 200, 5_000);
    return key;
  }

  /** The database back: the revocation promise holds for a change right after, and once B listens again. */
  async function expectRevocationBack(justAfter: { id: number; keyId: string } | undefined, restoredBefore: number, label: string): Promise<number[]> {
    const delays: number[] = [];
    if (justAfter) delays.push(await revocationDelay(justAfter));
    await logged(replicas[1]!, restoredLine, restoredBefore);
    delays.push(await revocationDelay(await freshKeyOnBoth(`revoked-${label}`)));
    for (const d of delays) expect(d, `${label}: ms until B refused a key disabled through A`).toBeLessThan(BACK_WITHIN_MS);
    return delays;
  }

  it("a restart (pg_ctl restart -m fast) under load", { timeout: 60_000 }, async () => {
    const victim = await freshKeyOnBoth("revoked-restart-0");
    const restoredBefore = restoredCount(replicas[1]!);
    const retriedBefore = retried();
    const traffic = await loadBoth();
    const restartAt = performance.now();
    const { refusedAt, acceptingAt } = await cluster.restart();
    const revoked = await expectRevocationBack(victim, restoredBefore, "restart");
    const back = await settle(traffic, acceptingAt, refusedAt);
    console.log(
      `[restart] down and up in ${ms(acceptingAt - restartAt)}; from the server's first accepted connection: last 503 at ${ms(back.last503)}, ` +
        `first write acknowledged at ${ms(back.firstWrite)}; ${retried() - retriedBefore} statements sent again; revocation on B after ${revoked.map(ms).join(", ")}`,
    );
    expectOnlyAllowedAnswers(traffic);
    expect(traffic.flatMap((t) => t.between("unknown", restartAt, acceptingAt)).some((s) => s.status === 503), "the restart was seen").toBe(true);
    expect(back.last503).toBeLessThan(BACK_WITHIN_MS);
    await expectAliveAndWritesKept();
  });

  it(`a stop, ${STOPPED_MS} ms down, and a start under load`, { timeout: 60_000 }, async () => {
    const victim = await freshKeyOnBoth("revoked-stop-0");
    const restoredBefore = restoredCount(replicas[1]!);
    const retriedBefore = retried();
    const traffic = await loadBoth();
    const stoppedAt = await cluster.stop();
    await hold(STOPPED_MS);
    const { refusedAt, acceptingAt } = await cluster.start();
    const revoked = await expectRevocationBack(victim, restoredBefore, "stop");
    const back = await settle(traffic, acceptingAt, refusedAt);
    console.log(
      `[stop] down for ${ms(acceptingAt - stoppedAt)}; from the server's first accepted connection: last 503 at ${ms(back.last503)}, ` +
        `first write acknowledged at ${ms(back.firstWrite)}; ${retried() - retriedBefore} statements sent again; revocation on B after ${revoked.map(ms).join(", ")}`,
    );
    expectOnlyAllowedAnswers(traffic);
    expectOutageAnswers(traffic, stoppedAt, refusedAt);
    expect(back.last503).toBeLessThan(BACK_WITHIN_MS);
    await expectAliveAndWritesKept();
  });

  it("pg_terminate_backend of each of keyplane's sessions in turn: inside a transaction, inside a statement, idle, the listeners", { timeout: 60_000 }, async () => {
    const restoredBefore = replicas.map(restoredCount);
    const retriedBefore = retried();
    const traffic = await loadBoth();
    // Sessions caught in the act: between a transaction's statements, and running one (a batch of inserts, a lookup).
    const caught = { "idle in transaction": 0, active: 0 };
    const huntUntil = performance.now() + CATCH_WITHIN_MS;
    while ((caught["idle in transaction"] < 2 || caught.active < 2) && performance.now() < huntUntil) {
      for (const s of await cluster.sessions()) {
        if (s.applicationName !== "keyplane" || (s.state !== "idle in transaction" && s.state !== "active")) continue;
        if (caught[s.state] >= 2) continue;
        if ((await cluster.terminate(s.pid)).length) caught[s.state]++;
        break;
      }
    }
    // Then every session keyplane holds, one after the other.
    const every = (await cluster.sessions()).filter((s) => s.applicationName.startsWith("keyplane"));
    for (const s of every) {
      await cluster.terminate(s.pid);
      await hold(TERMINATE_GAP_MS);
    }
    const lastAt = performance.now();
    const back = await settle(traffic, lastAt);
    for (const [i, r] of replicas.entries()) await logged(r, restoredLine, restoredBefore[i]!);
    const revoked = await revocationDelay(await freshKeyOnBoth("revoked-terminated"));
    const unavailable = traffic.flatMap((t) => t.samples.filter((s) => s.status === 503)).length;
    console.log(
      `[terminate] ${caught["idle in transaction"]} sessions ended inside a transaction, ${caught.active} inside a statement, then all ${every.length} ` +
        `(${every.filter((s) => s.applicationName === "keyplane-listen").length} listeners); ${unavailable} answers 503 in all; ` +
        `${retried() - retriedBefore} statements sent again; last 503 at ${ms(back.last503)} from the last termination; revocation on B after ${ms(revoked)}`,
    );
    expect(caught["idle in transaction"], "a session ended between a transaction's statements").toBeGreaterThan(0);
    expect(every.filter((s) => s.applicationName === "keyplane-listen")).toHaveLength(2);
    expectOnlyAllowedAnswers(traffic);
    expect(back.last503).toBeLessThan(BACK_WITHIN_MS);
    expect(revoked).toBeLessThan(BACK_WITHIN_MS);
    await expectAliveAndWritesKept();
  });

  it("idle sessions ended by idle_session_timeout: the first requests after a pause are answered as before", { timeout: 60_000 }, async () => {
    await cluster.admin(`ALTER SYSTEM SET idle_session_timeout = '${IDLE_SESSION_TIMEOUT_MS}ms'`);
    await cluster.admin("SELECT pg_reload_conf()");
    try {
      // A session waiting since before the reload waits on without the time-out: it starts anew.
      await cluster.terminate("keyplane");
      const retriedBefore = retried();
      const before = await loadBoth();
      await Promise.all(before.map((t) => t.stop()));
      const pooledPids = async () => (await cluster.sessions()).filter((s) => s.applicationName === "keyplane").map((s) => s.pid);
      const pooled = await pooledPids();
      await hold(IDLE_PAUSE_MS);
      const left = (await pooledPids()).filter((pid) => pooled.includes(pid));
      const resumedAt = performance.now();
      const traffic = replicas.map((r) => load(r));
      const back = await settle(traffic, resumedAt);
      console.log(
        `[idle_session_timeout] ${pooled.length} pooled sessions before the pause, ${left.length} of them after it; ` +
          `${retried() - retriedBefore} statements sent again; last 503 at ${ms(back.last503)} from the load's resumption`,
      );
      expect(pooled.length).toBeGreaterThan(0);
      expect(left, "the server ended the idle pooled sessions").toEqual([]);
      expectOnlyAllowedAnswers(before);
      expectOnlyAllowedAnswers(traffic);
      expect(traffic.flatMap((t) => t.samples.filter((s) => s.status === 503)), "no 503 after the pause").toEqual([]);
      await expectAliveAndWritesKept();
    } finally {
      await cluster.admin("ALTER SYSTEM RESET idle_session_timeout");
      await cluster.admin("SELECT pg_reload_conf()");
    }
  });
}

/** Holds this process's event loop: whatever arrives meanwhile is read only afterwards. */
function holdEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// The race of a request arriving just as PostgreSQL ends an idle pooled session: the server's goodbye
// has arrived but is not read yet when the next statement goes out on that connection, and the
// statement gets the goodbye for its answer. Made certain here: one pooled connection, ended while this
// process is held, the statement sent in the same turn that the hold ends.
function staleConnection(clusterOf: () => PgCluster): void {
  let cluster: PgCluster;
  let db: Database;
  const logs: string[] = [];

  beforeAll(async () => {
    cluster = clusterOf();
    await cluster.admin("CREATE DATABASE stale");
    db = openPostgres({ connectionString: cluster.url("stale"), log: captureLogger(logs), max: 1, timeoutMs: TIMEOUT_MS });
    await db.exec("CREATE TABLE writes (n integer)");
  });
  afterAll(() => db?.close());

  /** Has the server end the pool's one connection while this process is held; returns when the hold ends, with whether it did. */
  async function endedUnread(): Promise<{ ended: Promise<boolean> }> {
    await db.query("SELECT 1");
    const [session] = (await cluster.sessions()).filter((s) => s.applicationName === "keyplane");
    const termination = await cluster.terminateIn(session!.pid, END_IN_MS);
    holdEventLoop(HELD_MS);
    return termination;
  }
  const count = async (n: number) => (await db.query<{ c: number }>("SELECT count(*)::int AS c FROM writes WHERE n = $1", [n]))[0]!.c;

  it("a read is sent again on another connection, and answers", async () => {
    const { ended } = await endedUnread();
    expect(await db.query("SELECT 42 AS n")).toEqual([{ n: 42 }]);
    expect(await ended).toBe(true);
    expect(logs.some((line) => line.includes("sent again"))).toBe(true);
  });

  it("so is a transaction's BEGIN, and the transaction goes through", async () => {
    const { ended } = await endedUnread();
    await db.transaction((tx) => tx.query("INSERT INTO writes VALUES (1)"));
    expect(await ended).toBe(true);
    expect(await count(1)).toBe(1);
  });

  it("a write is not (it may have run before its session ended): the store is unavailable, and the client may repeat it", async () => {
    const { ended } = await endedUnread();
    await expect(db.query("INSERT INTO writes VALUES (2)")).rejects.toBeInstanceOf(StoreUnavailable);
    expect(await ended).toBe(true);
    expect(await count(2)).toBe(0);
  });

  it("a write whose session idle_session_timeout ended is sent again: the server ended it before reading the write", async () => {
    await db.query(`SET idle_session_timeout = ${END_IN_MS}`);
    holdEventLoop(HELD_MS);
    await db.query("INSERT INTO writes VALUES (3)");
    expect(await count(3)).toBe(1);
  });
}
