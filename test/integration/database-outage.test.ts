import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { listen } from "../../src/http/server.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { createPostgresDatabase } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { importFile, importWhileAnswered, ndjson, token } from "../support/import.ts";
import { startTraffic, statusesOf } from "../support/traffic.ts";
import { createTenant } from "../support/world.ts";

// PostgreSQL going away under load, through a TCP proxy of the test's own: cut (connections reset,
// new ones refused: the database down) or stalled (every byte held, nothing closed: a partition).
// docs/api.md, "When the database cannot be reached". Scaled down by default: a time-out of 1 s (5 s
// in production), a 3 s stall and 2 s outages, 3 revocation trials; KEYPLANE_OUTAGE_TIMEOUT_MS,
// KEYPLANE_STALL_MS, KEYPLANE_OUTAGE_MS and KEYPLANE_OUTAGE_TRIALS run the production-sized scenario.
const TIMEOUT_MS = Number(process.env.KEYPLANE_OUTAGE_TIMEOUT_MS ?? 1_000);
const STALL_MS = Number(process.env.KEYPLANE_STALL_MS ?? 3_000);
const OUTAGE_MS = Number(process.env.KEYPLANE_OUTAGE_MS ?? 2_000);
const TRIALS = Number(process.env.KEYPLANE_OUTAGE_TRIALS ?? 3);
const server = inject("postgresUrl");

const neverSeen = () => `XI${randomBytes(16).toString("hex").toUpperCase()}`;
/** How long the fault lasts is the scenario itself, not a wait for something to happen. */
const faultFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe("a database that goes away (PGlite, closed under the service)", () => {
  it("a key seen valid keeps verifying on /keys/self and /verify for the stale window, then 503; unknown tokens and writes 503", { timeout: 60_000 }, async () => {
    let now = 10_000;
    const svc = await startService("pglite", { keyCache: { ttlMs: 1, staleMs: 1_000, now: () => now } });
    cleanups.push(() => svc.stop());
    const acme = await createTenant(svc, "acme");
    const key = acme.keys.domain;
    expect((await svc.as(key).get("/keys/self")).status).toBe(200);
    await svc.database.db.close();

    now += 1_000; // past the TTL, at the end of the stale window
    expect((await svc.as(key).get("/keys/self")).status).toBe(200);
    const verdict = await svc.as(key).post("/verify", { key, method: "GET" });
    expect([verdict.status, verdict.body.code]).toEqual([200, "VALID"]);
    const unknown = await svc.as(neverSeen()).get("/keys/self");
    expect([unknown.status, unknown.body.error]).toEqual([503, "unavailable"]);
    expect((await svc.as(key).post("/verify", { key: neverSeen(), method: "GET" })).status).toBe(503);
    expect((await svc.as(acme.keys.customer).post("/keys", { name: "during" })).status).toBe(503);

    now += 1; // past the window: this process serves nothing older
    expect((await svc.as(key).get("/keys/self")).status).toBe(503);
    expect((await svc.as(key).post("/verify", { key, method: "GET" })).status).toBe(503);
  });
});

describe.skipIf(!server)("a database that goes away, through a proxy (PostgreSQL; skipped without a server)", () => {
  /** A keyplane whose database connections all go through a proxy of the test's own. */
  async function throughProxy(staleMs: number): Promise<{ svc: TestService; proxy: TcpProxy }> {
    const url = await newDatabase();
    const proxy = await startProxy(url);
    const db = openPostgres({ connectionString: proxy.urlFor(url), log: captureLogger([]), timeoutMs: TIMEOUT_MS });
    // Its /auth load asks as Envoy does, the original path after /auth.
    const svc = await startService("postgres", { database: { db, url, drop: async () => db.close() }, keyCache: { staleMs }, authGateway: "envoy" });
    cleanups.push(() => svc.stop());
    return { svc, proxy };
  }

  async function newDatabase(): Promise<string> {
    const created = await createPostgresDatabase();
    cleanups.push(() => created.drop());
    return created.url;
  }

  async function startProxy(url: string): Promise<TcpProxy> {
    const target = new URL(url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    cleanups.push(() => proxy.close());
    return proxy;
  }

  /** The cached key (on /keys/self, POST /verify and /auth), a token never seen, and provisioning, each in a loop. */
  function load(svc: TestService, cached: string, writer: string) {
    let n = 0;
    return startTraffic({
      cached: () => svc.as(cached).get("/keys/self"),
      verified: () => svc.as(writer).post("/verify", { key: cached, path: "/calls", method: "POST" }),
      forwarded: () => svc.as(cached).get("/auth/calls"),
      unknown: () => svc.as(neverSeen()).get("/keys/self"),
      write: () => svc.as(writer).post("/keys", { name: `load-${n++}` }),
    });
  }

  /** Every write answered 200 is there (a 503'd one may or may not be: provisioning is safe to repeat). */
  async function lostWrites(svc: TestService, writer: string, acknowledged: unknown[]): Promise<string[]> {
    const names = new Set(((await svc.as(writer).get("/keys")).body as { name: string }[]).map((k) => k.name));
    return (acknowledged as { name: string }[]).map((k) => k.name).filter((name) => !names.has(name));
  }

  it("stalled longer than the time-out: no answer slower than it plus 1 s, cached keys verify, no 500, no acknowledged write lost", { timeout: 120_000 }, async () => {
    const { svc, proxy } = await throughProxy(60_000);
    const acme = await createTenant(svc, "acme");
    expect((await svc.as(acme.keys.domain).get("/keys/self")).status).toBe(200);
    const traffic = load(svc, acme.keys.domain, acme.keys.customer);
    await traffic.until(() => traffic.acknowledged.write.length >= 5);

    const stalledAt = performance.now();
    proxy.stall();
    await faultFor(STALL_MS);
    proxy.restore();
    const restoredAt = performance.now();
    const recovered = await traffic.until((s) => s.what === "write" && s.status === 200 && s.sentAt >= restoredAt);
    await traffic.stop();

    const slowest = Math.max(...traffic.samples.map((s) => s.answeredAt - s.sentAt));
    const during = (what: "cached" | "verified" | "forwarded" | "unknown" | "write") => statusesOf(traffic.between(what, stalledAt, restoredAt));
    const lost = await lostWrites(svc, acme.keys.customer, traffic.acknowledged.write);
    console.log(
      `[outage] stall of ${Math.round(restoredAt - stalledAt)} ms, time-out ${TIMEOUT_MS} ms: slowest answer ${Math.round(slowest)} ms; ` +
        `statuses during it: cached ${during("cached")}, unknown ${during("unknown")}, writes ${during("write")}; ` +
        `writes 200 again ${Math.round(recovered.answeredAt - restoredAt)} ms after; ${traffic.acknowledged.write.length} writes acknowledged, ${lost.length} lost`,
    );
    expect(slowest).toBeLessThan(TIMEOUT_MS + 1_000);
    expect(statusesOf(traffic.samples)).toEqual(expect.arrayContaining([200, 503]));
    expect(statusesOf(traffic.samples).filter((status) => ![200, 401, 503].includes(status))).toEqual([]);
    expect(during("cached")).toEqual([200]);
    expect(during("verified")).toEqual([200]);
    expect(during("forwarded")).toEqual([200]);
    expect(during("unknown")).toContain(503);
    expect(during("write")).toContain(503);
    expect(recovered.answeredAt - restoredAt).toBeLessThan(1_000);
    expect(lost).toEqual([]);
  });

  it("cut under load: cached keys verify for the stale window, then 503; unknown tokens and writes 503; back within 1 s; no acknowledged write lost", { timeout: 60_000 }, async () => {
    const STALE_MS = 1_500;
    const { svc, proxy } = await throughProxy(STALE_MS);
    // The cached key counts as seen from its creation by this process (it wrote the state it knows),
    // and is not read again: its stale window ends between firstSentAt + STALE_MS and seenAt + STALE_MS.
    const firstSentAt = performance.now();
    const acme = await createTenant(svc, "acme");
    expect((await svc.as(acme.keys.domain).get("/keys/self")).status).toBe(200);
    const seenAt = performance.now();
    const traffic = load(svc, acme.keys.domain, acme.keys.customer);
    await traffic.until(() => traffic.acknowledged.write.length >= 5);

    const cutAt = performance.now();
    proxy.cut();
    await traffic.until((s) => s.what === "cached" && s.status === 503 && s.sentAt > seenAt + STALE_MS);
    proxy.restore();
    const restoredAt = performance.now();
    const recovered = await traffic.until((s) => s.what === "write" && s.status === 200 && s.sentAt >= restoredAt);
    await traffic.until((s) => s.what === "cached" && s.status === 200 && s.sentAt >= restoredAt);
    await traffic.stop();

    const lost = await lostWrites(svc, acme.keys.customer, traffic.acknowledged.write);
    const cached = (["cached", "verified", "forwarded"] as const).flatMap((what) => traffic.between(what, cutAt, restoredAt));
    console.log(
      `[outage] cut, stale window ${STALE_MS} ms: cached ${statusesOf(cached)}, unknown ${statusesOf(traffic.between("unknown", cutAt, restoredAt))}, ` +
        `writes ${statusesOf(traffic.between("write", cutAt, restoredAt))}; writes 200 again ${Math.round(recovered.answeredAt - restoredAt)} ms after; ` +
        `${traffic.acknowledged.write.length} writes acknowledged, ${lost.length} lost`,
    );
    expect(statusesOf(traffic.samples).filter((status) => ![200, 401, 503].includes(status))).toEqual([]);
    expect(statusesOf(cached.filter((s) => s.answeredAt < firstSentAt + STALE_MS)).filter((status) => status !== 200)).toEqual([]);
    expect(statusesOf(cached.filter((s) => s.sentAt > seenAt + STALE_MS))).toEqual([503]);
    expect(statusesOf(traffic.between("unknown", cutAt, restoredAt))).toEqual([503]);
    expect(statusesOf(traffic.between("write", cutAt, restoredAt))).toEqual([503]);
    expect(recovered.answeredAt - restoredAt).toBeLessThan(1_000);
    expect(lost).toEqual([]);
  });

  it("revocation reaches a second process within a second of the database's return, while it answers from the stale window during the outage", { timeout: 180_000 }, async () => {
    const url = await newDatabase();
    const proxy = await startProxy(url);
    const open = () => openPostgres({ connectionString: proxy.urlFor(url), log: captureLogger([]), timeoutMs: TIMEOUT_MS });
    const dbA = open();
    const dbB = open();
    const a = await startService("postgres", { database: { db: dbA, url, drop: () => dbA.close() } });
    cleanups.push(() => a.stop());
    const b = await startService("postgres", { database: { db: dbB, url, drop: () => dbB.close() } });
    cleanups.push(() => b.stop());
    const acme = await createTenant(a, "acme");
    const delays: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const key = (await a.as(acme.keys.customer).post("/keys", { name: `revoked-${trial}` })).body as { id: number; keyId: string };
      // B verifies the key all along: before, during and after the outage.
      const onB = startTraffic({ self: () => b.as(key.keyId).get("/keys/self") });
      cleanups.push(() => onB.stop());
      await onB.until((s) => s.status === 200);
      const cutAt = performance.now();
      proxy.cut();
      await faultFor(OUTAGE_MS);
      proxy.restore();
      const restoredAt = performance.now();
      // As soon as A answers, the key is disabled there. An attempt A answered 503 may have disabled
      // it too (its commit reached the database, its answer timed out): B answers as it was only
      // until the first attempt is sent.
      let putSentAt: number | undefined;
      const disable = async () => {
        putSentAt ??= performance.now();
        return (await a.as(acme.keys.customer).put(`/keys/${key.id}`, { active: false })).status;
      };
      await expect.poll(disable, { timeout: 10_000, interval: 10 }).toBe(200);
      const disabledAt = performance.now();
      const refused = await onB.until((s) => s.status === 401);
      await onB.stop();
      delays.push(Math.max(0, refused.answeredAt - disabledAt)); // 0: B refused before A's answer arrived
      const answered = onB.between("self", cutAt, putSentAt!);
      // When not, which answers and when, from the cut (ms): the database was back at restoredAt.
      const other = answered.filter((s) => s.status !== 200);
      const when = other.slice(0, 3).map((s) => `${s.status} sent ${Math.round(s.sentAt - cutAt)}, answered ${Math.round(s.answeredAt - cutAt)}`);
      expect(statusesOf(answered), `restored ${Math.round(restoredAt - cutAt)}, first PUT ${Math.round(putSentAt! - cutAt)}; ${other.length} others, first ${when.join("; ")}`).toEqual([200]);
    }
    console.log(`[outage] revocation on the second process after ${OUTAGE_MS} ms outages, ${TRIALS} trials: ${delays.map((d) => Math.round(d)).join(", ")} ms`);
    expect(Math.max(...delays)).toBeLessThan(1_000);
  });
  it("an import cut off from the database answers the lines it wrote, each once and in order, then an error line; run again, the file completes", { timeout: 120_000 }, async () => {
    const { svc, proxy } = await throughProxy(1_000);
    const http = await listen(svc.app, 0, "127.0.0.1");
    cleanups.push(() => http.close(100));
    const lines = ndjson(Array.from({ length: 3_000 }, (_, i) => ({ customer: "initech", name: `key-${i}`, keyId: token() })));
    const [first, rest] = [lines.slice(0, lines.length / 2), lines.slice(lines.length / 2)];
    // Half the file; once some of it is answered, the database goes away and the rest is sent.
    const answer = await importWhileAnswered(http.url, svc.adminToken, first, (answered, req) => {
      if (!req.writableEnded && answered.includes('"line":100,')) {
        proxy.cut();
        req.end(rest);
      }
    });
    const answered = answer.trimEnd().split("\n").map((l) => JSON.parse(l) as { line?: number; status?: string; error?: { status: number; error: string } });
    const last = answered.pop()!;
    expect(last.error).toMatchObject({ status: 503, error: "unavailable" });
    expect(answered.length).toBeGreaterThanOrEqual(100);
    expect(answered.length).toBeLessThan(3_000);
    expect(answered.map((a) => a.line)).toEqual(answered.map((_, i) => i + 1));
    expect(answered.filter((a) => a.status !== "created")).toEqual([]);

    proxy.restore();
    // Every line answered was written; others may have been too, and are then unchanged.
    const { summary } = (await importFile(svc, lines)).at(-1) as { summary: Record<string, number> };
    expect(summary).toMatchObject({ updated: 0, conflict: 0, invalid: 0 });
    expect(summary.unchanged).toBeGreaterThanOrEqual(answered.length);
    expect(summary.created! + summary.unchanged!).toBe(3_000);
  });
});
