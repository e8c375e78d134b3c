// keyplane on a PostgreSQL made highly available by Patroni (docs/high-availability.md): a real
// cluster of the test's own (test/support/patroni.ts: etcd, three Patroni nodes, synchronous_mode),
// two `keyplane serve` processes with the three hosts in DATABASE_URL, under a steady load of
// provisioning and verification, while the leader is SIGKILLed (its Patroni and its postmaster), and
// then, once the first node is back as the synchronous standby, the new leader too. Through each
// failover: cached keys verify, the rest is 200 or 503, never 500; provisioning answers 200 again
// within 5 s of the new primary accepting writes; every acknowledged key is there afterwards, and a
// name retried after a 503 made exactly one key; a key disabled just before the kill is refused by
// both processes, and one disabled after the failover by the other within a second; /readyz answers
// 503 while no primary does. And a standby alone in DATABASE_URL is refused, never read from.
import { afterAll, beforeAll, expect, it } from "vitest";
import { StoreUnavailable } from "../../src/domain/errors.ts";
import { translateError } from "../../src/store/errors.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { patroniUnavailable, PROBE_WRITE, startPatroni, type PatroniCluster, type PatroniNode } from "../support/patroni.ts";
import { describeNeeding } from "../support/needs.ts";
import { answersWith, call, expectAlive, expectOnlyAllowed, hold, neverSeen, startReplicas, type Replica as Process, type ReplicaSet } from "../support/replicas.ts";
import { captureLogger } from "../support/service.ts";
import { startTraffic, type Traffic } from "../support/traffic.ts";

/** KEYPLANE_DATABASE_TIMEOUT_MS of both processes. */
const TIMEOUT_MS = 1_000;
/** The promise checked: provisioning answers 200 again within this of the new primary accepting a write. */
const WRITES_BACK_WITHIN_MS = 5_000;
/** And a key disabled through one process is refused by the other within this. */
const REVOKED_WITHIN_MS = 1_000;
/** Keys each process provisions before the kill, so that every kind of request is under way. */
const WARM_WRITES = 5;
/** How often the test tries its own write on the node to be promoted. */
const PROBE_MS = 20;

type Kind = "cached" | "verified" | "unknown" | "ready" | "provision1" | "provision2";
const KINDS: Kind[] = ["cached", "verified", "unknown", "ready", "provision1", "provision2"];
const WRITES: Kind[] = ["provision1", "provision2"];
const NORMAL: Record<Kind, number[]> = { cached: [200], verified: [200], unknown: [401], ready: [200], provision1: [200], provision2: [200] };
/** Through a failover: the normal answer or 503; a cached key never anything but 200. */
const ALLOWED = Object.fromEntries(KINDS.map((kind) => [kind, kind === "cached" || kind === "verified" ? NORMAL[kind] : [...NORMAL[kind], 503]])) as Record<Kind, number[]>;

interface Replica extends Process {
  /** Every name provisioning was asked for, and those acknowledged (200). */
  tried: Set<string>;
  acknowledged: string[];
}

describeNeeding(patroniUnavailable(), "keyplane through Patroni failovers", () => {
  let cluster: PatroniCluster;
  let set: ReplicaSet;
  let replicas: Replica[] = [];
  let root = "";
  let cachedKey = "";
  let names = 0;

  beforeAll(async () => {
    cluster = await startPatroni();
    set = await startReplicas(cluster.url(), ["A", "B"], { KEYPLANE_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) });
    replicas = set.replicas.map((r) => ({ ...r, tried: new Set(), acknowledged: [] }));
    root = await set.customerWithRoot("acme");
    cachedKey = (await seenOnBoth("cached")).keyId;
    for (const r of replicas) expect((await call(r.p.url, "GET", "/keys/self", root)).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await set?.stop();
    await cluster?.destroy();
  }, 60_000);

  /** A key provisioned through A and seen valid by both (so in both caches). */
  async function seenOnBoth(name: string): Promise<{ id: number; keyId: string }> {
    const made = await call(replicas[0]!.p.url, "POST", "/customers/self/keys", root, { name });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const key = made.body as { id: number; keyId: string };
    for (const r of replicas) expect((await call(r.p.url, "GET", "/keys/self", key.keyId)).status).toBe(200);
    return key;
  }

  /** Disables `key` through A, retrying a 503: when A answered 200. */
  async function disable(key: { id: number }): Promise<number> {
    for (let tries = 0; ; tries++) {
      const put = await call(replicas[0]!.p.url, "PUT", `/customers/self/keys/${key.id}`, root, { active: false });
      if (put.status === 200) return performance.now();
      expect(put.status, "disabling a key").toBe(503);
      if (tries > 1_000) throw new Error("A never took the change");
      await hold(10);
    }
  }

  /** Provisioning, verification and unknown tokens on one process, each kind in a loop of its own. */
  function load(r: Replica): Traffic<Kind> {
    const url = r.p.url;
    // A name answered 503 is asked for again, as a client would: provisioning is idempotent by name.
    const provisioning = (kind: Kind) => {
      let name = "";
      return async () => {
        name ||= `load-${r.name}-${names++}`;
        r.tried.add(name);
        const a = await set.checked(`${r.name} ${kind}`, call(url, "POST", "/customers/self/keys", root, { name }));
        if (a.status === 200) {
          r.acknowledged.push(name);
          name = "";
        }
        return a;
      };
    };
    return startTraffic<Kind>({
      cached: () => set.checked(`${r.name} cached`, call(url, "GET", "/keys/self", cachedKey)),
      verified: () => set.checked(`${r.name} verified`, call(url, "POST", "/verify", undefined, { key: cachedKey, path: "/calls", method: "GET" }), true),
      unknown: () => set.checked(`${r.name} unknown`, call(url, "GET", "/keys/self", neverSeen())),
      ready: async () => {
        await hold(50); // at a probe's pace, not a flood
        return call(url, "GET", "/readyz");
      },
      provision1: provisioning("provision1"),
      provision2: provisioning("provision2"),
    });
  }

  const ms = (n: number) => `${Math.round(n)} ms`;

  /** Kills `from`, the leader, under load; `to` is promoted. Checks every promise of the failover; returns its figures. */
  async function failover(from: PatroniNode, to: PatroniNode, label: string): Promise<string> {
    const disabledBefore = await seenOnBoth(`disabled-before-${label}`);
    const acknowledgedBefore = replicas.map((r) => r.acknowledged.length);
    const traffic = replicas.map((r) => load(r));
    await Promise.all(traffic.map((t, i) => t.until(() => replicas[i]!.acknowledged.length >= acknowledgedBefore[i]! + WARM_WRITES, 30_000)));
    await disable(disabledBefore);

    const killedAt = cluster.kill(from);
    const acceptingAt = await cluster.acceptsWrites(to, PROBE_MS);
    // Provisioning back on both processes: a write sent after the new primary took one, answered 200.
    const back = await Promise.all(traffic.map((t) => t.until((s) => WRITES.includes(s.what) && s.sentAt >= acceptingAt && s.status === 200, WRITES_BACK_WITHIN_MS + 5_000)));
    await Promise.all(traffic.flatMap((t) => KINDS.map((kind) => t.until((s) => s.what === kind && s.sentAt >= acceptingAt && NORMAL[kind].includes(s.status)))));
    await Promise.all(traffic.map((t) => t.stop()));
    expectAlive(replicas);

    expectOnlyAllowed(replicas, traffic, ALLOWED);
    for (const [i, t] of traffic.entries()) {
      expect(t.between("unknown", killedAt, acceptingAt).some((s) => s.status === 503), `${replicas[i]!.name} saw the failover`).toBe(true);
      expect(t.between("ready", killedAt, acceptingAt).some((s) => s.status === 503), `${replicas[i]!.name}: /readyz while no primary answers`).toBe(true);
    }
    expect(set.wrong).toEqual([]);
    const writesBack = back.map((s) => s.answeredAt - acceptingAt);
    for (const w of writesBack) expect(w, "provisioning back after the new primary accepted a write").toBeLessThan(WRITES_BACK_WITHIN_MS);

    // The key disabled just before the kill: refused by both.
    for (const r of replicas) await answersWith(r, disabledBefore.keyId, 401, REVOKED_WITHIN_MS + 2_000);
    // A key disabled now, through A: refused by B within a second.
    const disabledAfter = await seenOnBoth(`disabled-after-${label}`);
    const revokedAt = await disable(disabledAfter);
    const revoked = (await answersWith(replicas[1]!, disabledAfter.keyId, 401, 10_000)) - revokedAt;
    expect(revoked, "B refusing a key disabled through A after the failover").toBeLessThan(REVOKED_WITHIN_MS);

    // Every acknowledged key is there, and no name made two.
    for (const r of replicas) {
      const present = await cluster.admin<{ name: string; n: number }>(
        "SELECT name, count(*)::int AS n FROM api_keys WHERE name = ANY($1) AND deleted_at IS NULL GROUP BY name",
        [[...r.tried]],
      );
      expect(r.acknowledged.filter((n) => !present.some((row) => row.name === n)), `${r.name}: acknowledged keys missing`).toEqual([]);
      expect(present.filter((row) => row.n !== 1), `${r.name}: names with more than one key`).toEqual([]);
    }
    const leader = (await cluster.members()).find((m) => m.role === "leader");
    expect(leader?.name).toBe(to.name);
    const unavailableAnswers = traffic.flatMap((t) => t.samples.filter((s) => s.status === 503)).length;
    return (
      `[${label}] ${from.name} killed; ${to.name} took a write ${ms(acceptingAt - killedAt)} after, keyplane ${writesBack.map((w) => ms(acceptingAt - killedAt + w)).join(" and ")} after ` +
      `(${writesBack.map(ms).join(", ")} after the new primary); ${unavailableAnswers} answers 503; revocation across processes ${ms(revoked)} after`
    );
  }

  it("a server in recovery counts as unreachable: a standby alone in DATABASE_URL is refused, never read from", async () => {
    const standby = cluster.nodes[2];
    const db = openPostgres({ connectionString: standby.url(), log: captureLogger([]), timeoutMs: TIMEOUT_MS });
    try {
      await expect(db.query("SELECT 1")).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(db.transaction((tx) => tx.query("SELECT 1"))).rejects.toBeInstanceOf(StoreUnavailable);
      // On the standby itself, a write is refused as read-only (25006): unavailable too, not a defect.
      await expect(cluster.admin(PROBE_WRITE, [], standby)).rejects.toMatchObject({ code: "25006" });
      expect(translateError(await cluster.admin(PROBE_WRITE, [], standby).catch((e: unknown) => e))).toBeInstanceOf(StoreUnavailable);
    } finally {
      await db.close();
    }
  });

  it("the leader killed under load: writes back within 5 s of the new primary, nothing acknowledged lost, no 500", { timeout: 90_000 }, async () => {
    const [node1, node2] = cluster.nodes;
    console.log(await failover(node1, node2, "failover 1"));
  });

  it("the first node back as the synchronous standby, then the new leader killed: back to the first node", { timeout: 120_000 }, async () => {
    const [node1, node2] = cluster.nodes;
    await cluster.start(node1);
    await cluster.settled("node2", "node1");
    console.log(await failover(node2, node1, "failover 2"));
  });
});
