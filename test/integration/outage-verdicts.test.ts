// The whole verdict through a database outage (docs/api.md, "When the database cannot be reached"): a
// key seen valid answers 200 on GET /keys/self, on a key path, on POST /verify and on /auth for a path
// that names its customer, whose policy restricts the client's address, during every answer of the
// outage, not only after it; so does a key this process has just created or enabled, never verified
// before. A key with a rate limit is admitted from what the process holds, then 503; a token never seen
// answers 503. Two `keyplane serve` processes on a PostgreSQL cluster of the test's own
// (test/support/pg-cluster.ts), reached through a TCP proxy (test/support/tcp-proxy.ts), through a
// restart, a stop of 5 s, every connection reset with new ones refused for 5 s, and each of keyplane's
// sessions ended in turn. The load and the processes are those of postgres-restart.test.ts, in small.
import { afterAll, beforeAll, expect, it } from "vitest";
import { clusterUnavailable, startCluster, type PgCluster } from "../support/pg-cluster.ts";
import { describeNeeding } from "../support/needs.ts";
import { call, expectAlive, expectOnlyAllowed, hold, neverSeen, startReplicas, type Answer, type Replica as Process, type ReplicaSet } from "../support/replicas.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { startTraffic, type Traffic } from "../support/traffic.ts";

/** KEYPLANE_DATABASE_TIMEOUT_MS of both processes. */
const TIMEOUT_MS = 1_000;
/** How long the database stays stopped, or unreachable through the proxy. */
const OUTAGE_MS = 5_000;
/** After the database is back: the load runs on this long, so answers after the return count too. */
const AFTER_MS = 1_500;
/**
 * After the writes of `prepare`, before the fault: each process hears its own changes announced, and
 * its listener reads them again from the key event log at its next check (250 ms); each time it drops
 * the key and reads it again. A fault within that moment finds the key dropped and not yet read: 503
 * (docs/api.md, "When the database cannot be reached", says so). The scenario starts after it.
 */
const HEARD_MS = 600;
/** Between two terminations of keyplane's sessions. */
const TERMINATE_GAP_MS = 100;

type Kind = "self" | "keyPath" | "verify" | "auth" | "wroteSelf" | "wroteVerify" | "wroteAuth" | "limited" | "unknown" | "provision";
/** Keys seen valid, or written by the process asked: 200, every time. */
const SEEN: Kind[] = ["self", "keyPath", "verify", "auth", "wroteSelf", "wroteVerify", "wroteAuth"];
/** Every answer allowed: a seen or written key 200, always; the others their answer or 503. */
const ALLOWED = { ...Object.fromEntries(SEEN.map((kind) => [kind, [200]])), limited: [200, 503], unknown: [401, 503], provision: [200, 503] } as Record<Kind, number[]>;

/** The customer's policy: only clients on the loopback network (every request of the test comes from there). */
const CUSTOMER_POLICY = { restrictions: { ips: ["127.0.0.0/8", "::1/128"] } };
/** A key's own limit, far above what the test asks: admitted from the process's leases while it cannot reach the database. */
const LIMITED_POLICY = { ratelimits: [{ name: "calls", limit: 1_000_000, windowSeconds: 3_600 }] };
const PATH = "/customers/acme/calls";

interface Replica extends Process {
  /** Its customer's manager key, used all along. */
  manager: string;
  limited: string;
  /** Keys this process created or enabled just before the current outage, never verified before it. */
  wrote: string[];
}

describeNeeding(clusterUnavailable(), "every verdict of a seen key through a database outage", () => {
  let cluster: PgCluster;
  let proxy: TcpProxy;
  let set: ReplicaSet;
  const replicas: Replica[] = [];
  let written = 0;

  beforeAll(async () => {
    cluster = await startCluster();
    proxy = await startTcpProxy("127.0.0.1", cluster.port);
    set = await startReplicas(proxy.urlFor(cluster.url()), ["A", "B"], { KEYPLANE_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) });
    const a = set.replicas[0]!.p.url;
    const made = async (body: object) => ((await call(a, "POST", "/admin/customers/acme/keys", set.adminToken, body)).body as { keyId: string }).keyId;
    expect((await call(a, "POST", "/admin/customers", set.adminToken, { name: "acme" })).status).toBe(201);
    expect((await call(a, "PUT", "/admin/customers/acme/policy", set.adminToken, CUSTOMER_POLICY)).status).toBe(200);
    for (const r of set.replicas) {
      replicas.push({ ...r, manager: await made({ name: `manager-${r.name}` }), limited: await made({ name: `limited-${r.name}`, policy: LIMITED_POLICY }), wrote: [] });
    }
  }, 90_000);

  afterAll(async () => {
    await set?.stop();
    await proxy?.close();
    await cluster?.destroy();
  });

  /**
   * Before each outage: each process sees its manager and limited keys valid on every endpoint, then
   * creates a key, and disables and enables another, which it does not verify.
   */
  async function prepare(): Promise<void> {
    for (const r of replicas) {
      for (const kind of ["self", "keyPath", "verify", "auth"] as const) expect((await ask(r, kind, r.manager)).status, `${r.name} ${kind} before`).toBe(200);
      expect((await ask(r, "auth", r.limited)).status).toBe(200);
      const created = await call(r.p.url, "POST", "/customers/self/keys", r.manager, { name: `wrote-${r.name}-${written++}` });
      expect(created.status).toBe(200);
      const enabled = await call(r.p.url, "POST", "/customers/self/keys", r.manager, { name: `wrote-${r.name}-${written++}`, active: false });
      const { id, keyId } = enabled.body as { id: number; keyId: string };
      expect((await call(r.p.url, "PUT", `/customers/self/keys/${id}`, r.manager, { active: true })).status).toBe(200);
      r.wrote = [(created.body as { keyId: string }).keyId, keyId];
    }
    await hold(HEARD_MS);
  }

  function ask(r: Replica, kind: Kind, token: string): Promise<Answer> {
    const url = r.p.url;
    switch (kind) {
      case "self": case "wroteSelf": case "unknown":
        return call(url, "GET", "/keys/self", token);
      case "keyPath":
        return call(url, "GET", "/customers/acme/keys/self", token);
      case "verify": case "wroteVerify":
        return call(url, "POST", "/verify", undefined, { key: token, path: PATH, method: "GET", ip: "127.0.0.1" });
      case "auth": case "wroteAuth": case "limited":
        return call(url, "GET", "/auth", token, undefined, { "x-original-uri": PATH, "x-original-method": "GET" });
      case "provision":
        return call(url, "POST", "/customers/self/keys", token, { name: `load-${r.name}-${written++}` });
    }
  }

  function load(r: Replica): Traffic<Kind> {
    let turn = 0;
    const checked = (kind: Kind, token: string) => (): Promise<Answer> => set.checked(`${r.name} ${kind}`, ask(r, kind, token), kind === "verify" || kind === "wroteVerify");
    const wrote = () => r.wrote[turn++ % r.wrote.length]!;
    return startTraffic<Kind>({
      self: checked("self", r.manager),
      keyPath: checked("keyPath", r.manager),
      verify: checked("verify", r.manager),
      auth: checked("auth", r.manager),
      wroteSelf: () => checked("wroteSelf", wrote())(),
      wroteVerify: () => checked("wroteVerify", wrote())(),
      wroteAuth: () => checked("wroteAuth", wrote())(),
      limited: checked("limited", r.limited),
      unknown: () => checked("unknown", neverSeen())(),
      provision: checked("provision", r.manager),
    });
  }

  /** Runs `fault` under load on both processes; every answer from before it to AFTER_MS after it is checked. */
  async function throughOutage(what: string, fault: () => Promise<void>): Promise<void> {
    await prepare();
    const traffic = replicas.map((r) => load(r));
    await Promise.all(traffic.map((t) => t.until((s) => s.what === "provision" && s.status === 200)));
    const from = performance.now();
    await fault();
    const back = performance.now();
    await hold(AFTER_MS);
    await Promise.all(traffic.map((t) => t.stop()));
    for (const [i, t] of traffic.entries()) {
      const r = replicas[i]!;
      const counts = Object.fromEntries((Object.keys(ALLOWED) as Kind[]).map((kind) => {
        const during = sentDuring(t, kind, from, back);
        return [kind, `${during.filter((s) => s.status === 200).length}/${during.length} 200, ${during.filter((s) => s.status === 503).length} 503`];
      }));
      console.log(`[${what}] ${r.name}, requests sent during the outage, and their answers: ${JSON.stringify(counts)}`);
      expect(SEEN.flatMap((kind) => sentDuring(t, kind, from, back)).length, `${what}: ${r.name}: seen keys asked during the outage`).toBeGreaterThan(0);
    }
    expectOnlyAllowed(replicas, traffic, ALLOWED, `${what}: `);
    expect(set.wrong).toEqual([]);
    expectAlive(replicas);
  }

  /**
   * The requests sent while the database was out of reach, however late their answers came: one sent
   * during a short restart may wait for the database up to TIMEOUT_MS, and is answered after its return.
   */
  function sentDuring(t: Traffic<Kind>, kind: Kind, from: number, back: number) {
    return t.samples.filter((s) => s.what === kind && s.sentAt >= from && s.sentAt < back);
  }

  /** A token never seen, while the database is out of reach: 503 on both processes. */
  async function expectNeverSeenUnavailable(what: string): Promise<void> {
    for (const r of replicas) expect((await ask(r, "unknown", neverSeen())).status, `${what}: ${r.name} never-seen token`).toBe(503);
  }

  it("a restart", async () => {
    await throughOutage("restart", async () => void (await cluster.restart()));
  }, 60_000);

  it("a stop of 5 s, then a start", async () => {
    await throughOutage("stop", async () => {
      await cluster.stop();
      await hold(OUTAGE_MS);
      await expectNeverSeenUnavailable("stop");
      await cluster.start();
    });
  }, 60_000);

  it("every connection reset, and new ones refused for 5 s", async () => {
    await throughOutage("cut", async () => {
      proxy.cut();
      await hold(OUTAGE_MS);
      await expectNeverSeenUnavailable("cut");
      proxy.restore();
    });
  }, 60_000);

  it("each of keyplane's sessions ended in turn", async () => {
    await throughOutage("terminate", async () => {
      const sessions = (await cluster.sessions()).filter((s) => s.applicationName.startsWith("keyplane"));
      expect(sessions.length).toBeGreaterThan(2);
      for (const session of sessions) {
        await cluster.terminate(session.pid);
        await hold(TERMINATE_GAP_MS);
      }
    });
  }, 60_000);
});
