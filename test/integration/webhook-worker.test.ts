// The webhook sender's worker thread yields to the thread that serves requests (src/webhook-worker.ts,
// docs/adr/0016): while that thread's event loop is busy, the worker claims at most a small batch
// every 100 ms, and sends the rest once the load falls. This test's own thread is the serving thread,
// kept busy in slices of 20 ms (as requests keep it: timers and I/O still run between them); the
// receiver is the benchmark's (bench/receiver.ts), in a process of its own so that it answers while
// this thread is busy.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUSY_POLL_MS, YIELDING_BATCH } from "../../src/services/webhooks/webhook-sender.ts";
import { backends, openTestDatabase } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";
import { createTenant } from "../support/world.ts";

const hasPostgres = backends().includes("postgres");
const RECEIVER = fileURLToPath(new URL("../../bench/receiver.ts", import.meta.url));
const KEYS = 400;
/** The sender's attempts at once, held by the receiver before the load starts. */
const CONCURRENCY = 32;

/** Keeps this thread busy for `ms`, in slices of 20 ms with a turn of the event loop between them. */
function busyFor(ms: number): Promise<void> {
  const end = performance.now() + ms;
  return new Promise((resolve) => {
    const slice = () => {
      const until = Math.min(end, performance.now() + 20);
      while (performance.now() < until);
      if (performance.now() < end) setImmediate(slice);
      else resolve();
    };
    slice();
  });
}

describe.skipIf(!hasPostgres)("the webhook worker on PostgreSQL", () => {
  let svc: TestService;
  let receiver: ChildProcess;
  let receiverUrl: string;
  const stats = async () => (await (await fetch(`${receiverUrl}/stats`)).json()) as { received: number };
  const waitForReceived = async (n: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while ((await stats()).received < n) {
      if (Date.now() > deadline) throw new Error(`the receiver got ${(await stats()).received} messages, not ${n}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  beforeAll(async () => {
    receiver = spawn(process.execPath, [RECEIVER], { stdio: ["ignore", "pipe", "inherit"] });
    receiverUrl = await new Promise<string>((resolve) => {
      receiver.stdout!.on("data", (chunk: Buffer) => {
        const match = /listening (http:\/\/\S+)/.exec(chunk.toString());
        if (match) resolve(match[1]!);
      });
    });
    const log = captureLogger([], []);
    const database = await openTestDatabase("postgres", log);
    svc = await startService("postgres", {
      database,
      webhooks: { allowHttp: true, allowPrivate: true, worker: { connectionString: database.url!, timeoutMs: 5_000, logLevel: "silent" } },
    });
  }, 60_000);
  afterAll(async () => {
    await svc?.stop();
    receiver?.kill();
  });

  it("sends a small batch every 100 ms at most while this thread is busy, and the rest once it is not", { timeout: 60_000 }, async () => {
    const root = (await createTenant(svc, "acme")).keys.customer;
    expect((await svc.as(root).post("/webhooks", { url: `${receiverUrl}/bench`, events: ["key.created"] })).status).toBe(201);
    // The receiver holds what it gets until released: the sender's first attempts wait, the rest in the outbox.
    for (let i = 0; i < KEYS; i++) expect((await svc.as(root).post("/keys", { name: `k${i}` })).status).toBe(200);
    await waitForReceived(CONCURRENCY, 10_000);

    const load = busyFor(1_500);
    // Released once the worker has been told (a sample of 100 ms), while the load goes on.
    await new Promise((resolve) => setTimeout(resolve, 3 * BUSY_POLL_MS));
    const released = performance.timeOrigin + performance.now();
    await fetch(`${receiverUrl}/release`, { method: "POST" });
    await load;
    const ended = performance.timeOrigin + performance.now();
    // What came in while the load went on: in claims of YIELDING_BATCH at most, one every 100 ms (and
    // the 5-second poll's, which may fall between two), so never more than two claims' worth within
    // 50 ms (a claim's attempts leave together; unyielding, 16 to 32 at a time, and 128 in 50 ms).
    const during = ((await (await fetch(`${receiverUrl}/arrivals`)).json()) as number[]).filter((at) => at > released + 5 && at <= ended);
    expect(during.length).toBeGreaterThan(0);
    const densest = Math.max(...during.map((at) => during.filter((other) => other >= at && other < at + BUSY_POLL_MS / 2).length));
    expect(densest).toBeLessThanOrEqual(2 * YIELDING_BATCH);

    await waitForReceived(KEYS, 20_000);
  });

  it("tells the size of its thread's own heap, which the serving thread's figures leave out", async () => {
    const bytes = await svc.webhooks.heapBytes!();
    expect(bytes).toBeGreaterThan(2 ** 20);
    expect(bytes).toBeLessThan(112 * 2 ** 20); // its bound: 96 MiB of old generation and 16 of young
  });
});
