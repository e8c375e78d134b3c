import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ATTEMPT_TIMEOUT_MS } from "../../src/domain/webhooks/webhook-schedule.ts";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import { startServerProcess, type ServerProcess } from "../support/process.ts";
import { signatureValid, startReceiver, type Receiver } from "../support/webhook-receiver.ts";

// Webhooks from several keyplane processes on one PostgreSQL database (docs/webhooks.md, "Delivery"):
// each message is sent by one of them, once; and a process SIGKILLed while its receiver holds the
// request loses nothing: once the attempt's lease ends, another process sends it again.
const hasPostgres = backends().includes("postgres");
const skipReason = hasPostgres ? "" : " (skipped: no PostgreSQL server; set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432)";
/** An attempt's lease: the time-out and 5 s (src/services/webhooks/webhook-sender.ts). */
const LEASE_MS = ATTEMPT_TIMEOUT_MS + 5_000;
interface Delivery { id: number; state: string; attempts: { status: number | null; error: string | null }[] }

describe.skipIf(!hasPostgres)(`webhooks from two keyplane processes on one PostgreSQL database${skipReason}`, () => {
  let database: { url: string; drop(): Promise<void> };
  const processes: ServerProcess[] = [];
  const dataDirs: string[] = [];
  let receiver: Receiver;
  let a: ServerProcess;
  let b: ServerProcess;
  let token: string;
  let hook: { id: number; secret: string };
  const adminToken = "kpa_webhooks_" + randomBytes(24).toString("hex");
  const masterKey = randomBytes(32).toString("hex");

  const start = async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "keyplane-webhooks-"));
    dataDirs.push(dataDir);
    const p = await startServerProcess({
      DATABASE_URL: database.url, KEYPLANE_MASTER_KEY: masterKey, KEYPLANE_ADMIN_TOKEN: adminToken, KEYPLANE_DATA_DIR: dataDir,
      KEYPLANE_WEBHOOK_ALLOW_HTTP: "true", KEYPLANE_WEBHOOK_ALLOW_PRIVATE: "true",
    });
    processes.push(p);
    return p;
  };
  const call = async (p: ServerProcess, method: string, path: string, as: string, body?: object) => {
    const res = await fetch(p.url + path, {
      method, headers: { authorization: `Bearer ${as}`, ...(body && { "content-type": "application/json" }) }, body: body && JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const deliveries = async (p: ServerProcess) => (await call(p, "GET", `/webhooks/${hook.id}/deliveries?limit=1000`, token)) as Delivery[];

  beforeAll(async () => {
    database = await createPostgresDatabase();
    receiver = await startReceiver();
    [a, b] = await Promise.all([start(), start()]);
    await call(a, "POST", "/admin/customers", adminToken, { name: "acme" });
    token = ((await call(a, "POST", "/admin/customers/acme/keys", adminToken, { name: "root" })) as { keyId: string }).keyId;
    hook = await call(a, "POST", "/webhooks", token, { url: `${receiver.url}/hook`, events: ["key.created", "key.updated"] });
  }, 60_000);
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.stop();
    await receiver?.close();
    await database?.drop();
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
  });

  it("delivers each of 100 key changes made on either process exactly once", { timeout: 60_000 }, async () => {
    const changes: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      const p = i % 2 === 0 ? a : b;
      changes.push(call(p, "POST", "/keys", token, { name: `k${i}` }).then((k: { id: number }) => call(p === a ? b : a, "PUT", `/keys/${k.id}`, token, { name: `k${i}-renamed` })));
    }
    await Promise.all(changes);
    const received = await receiver.waitFor(100, 30_000);
    // Recorded as delivered at the first attempt, each: none can be sent again.
    const until = Date.now() + 10_000;
    let done = await deliveries(a);
    while (done.some((d) => d.state !== "delivered") && Date.now() < until) done = await deliveries(a);
    expect(done).toHaveLength(100);
    expect(done.every((d) => d.state === "delivered" && d.attempts.length === 1 && d.attempts[0]!.status === 204)).toBe(true);
    expect(received).toHaveLength(100);
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(100);
    expect(received.every((r) => signatureValid(hook.secret, r))).toBe(true);
    const types = received.map((r) => (JSON.parse(r.body) as { type: string }).type);
    expect(types.filter((t) => t === "key.created")).toHaveLength(50);
    expect(types.filter((t) => t === "key.updated")).toHaveLength(50);
  });

  it("delivers what a process SIGKILLed mid-attempt was sending, once its lease ends, from another", { timeout: 90_000 }, async () => {
    // Only a sends: b stops (cleanly) first, so the held attempts are a's.
    expect(await b.stop()).toBe(0);
    receiver.received.length = 0;
    receiver.answer = () => "hold";
    for (let i = 0; i < 5; i++) await call(a, "POST", "/keys", token, { name: `held-${i}` });
    const held = [...(await receiver.waitFor(5, 10_000))];
    const killedAt = Date.now();
    a.child.kill("SIGKILL");
    receiver.answer = () => ({ status: 200 });
    receiver.release(); // a's connections are gone: nobody reads these answers
    const c = await start();
    const again = await receiver.waitFor(10, LEASE_MS + 15_000);
    const afterMs = Date.now() - killedAt;
    expect(new Set(again.slice(5).map((r) => r.headers["webhook-id"]))).toEqual(new Set(held.map((r) => r.headers["webhook-id"])));
    expect(again.slice(5).every((r) => signatureValid(hook.secret, r))).toBe(true);
    // Not before the lease ran out: until then the attempt was a's.
    expect(afterMs).toBeGreaterThanOrEqual(LEASE_MS - 2_000);
    // Their outcomes are written a moment after the receiver answers.
    const until = Date.now() + 10_000;
    let latest = (await deliveries(c)).slice(0, 5);
    while (latest.some((d) => d.state !== "delivered") && Date.now() < until) latest = (await deliveries(c)).slice(0, 5);
    for (const d of latest) {
      expect(d.state).toBe("delivered");
      expect(d.attempts.map((x) => x.status ?? x.error)).toEqual([expect.stringMatching(/^abandoned/), 200]);
    }
    console.log(`webhooks: held attempts of a SIGKILLed process sent again after ${afterMs} ms`);
  });
});
