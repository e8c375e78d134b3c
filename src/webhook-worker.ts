import { setPriority } from "node:os";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import type { Logger } from "pino";
import { createSealer } from "./domain/seal.ts";
import { createLogger } from "./logging.ts";
import { httpWebhookClient } from "./services/webhooks/webhook-client.ts";
import { WebhookSender, type SendResult } from "./services/webhooks/webhook-sender.ts";
import { systemResolver } from "./services/webhooks/webhook-settings.ts";
import { openPostgres } from "./store/postgres.ts";

// On PostgreSQL, `keyplane serve` sends webhooks from a worker thread of its own (docs/adr/0016): its
// own event loop, timers, pool of two connections and listening connection. An attempt costs the
// sender some 100-200 µs of CPU (node:http's request, a socket write, the HMAC, its share of a claim
// and an outcome's write); on the thread that serves requests that would be taken from provisioning,
// /verify and /auth, which delivery must never slow. The thread also runs at the lowest priority (nice
// 19: on Linux a thread's own), so that when the cores are all busy, requests go first and messages
// wait in the outbox; on idle cores it sends at full speed.
const NICE = 19;
/**
 * And it yields to the thread that serves requests: while that thread's event loop was busy for at
 * least this share of the last LOAD_SAMPLE_MS, the sender sends slowly (YIELDING_BATCH). A thread's
 * priority does not reach PostgreSQL, whose share of a message (its claim and its outcome) would
 * otherwise be taken from the key paths' statements.
 */
const BUSY_LOOP = 0.5;
const LOAD_SAMPLE_MS = 100;
/** The sender thread's heap: it holds at most 32 attempts at once, and a claim's rows (docs/webhooks.md). */
const WORKER_HEAP = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 };

export interface WebhookWorkerSetup {
  connectionString: string;
  timeoutMs: number;
  masterKey: Uint8Array;
  allowHttp: boolean;
  allowPrivate: boolean;
  logLevel: string;
  /** What the worker's log lines must never hold (the admin token). */
  secrets: string[];
}

/** What the composition root drives, in a worker or in its own thread (src/keyplane.ts). */
export interface Sender {
  /** Makes every attempt due now and waits for their outcomes. */
  drain(): Promise<void>;
  close(): Promise<void>;
  /** The sender thread's V8 heap, committed, in bytes: absent where the sender shares the serving thread's heap. */
  heapBytes?(): Promise<number>;
}

type ToWorker = { type: "drain" | "close"; id: number } | { type: "load"; busy: boolean };
type FromWorker = { type: "ready" } | { type: "done"; id: number } | { type: "sent"; counts: Partial<Record<SendResult, number>> } | { type: "failed"; message: string };

const MARK = "keyplane-webhook-worker";

/**
 * Starts the worker and waits until its sender listens; `onSent` gets its attempts' counts, by result,
 * now and then. A worker that stops unasked (a defect) is replaced a second later: what it was sending
 * stays in the outbox, and is sent once its leases end.
 */
export async function startWebhookWorker(setup: WebhookWorkerSetup, log: Logger, onSent: (result: SendResult, count: number) => void): Promise<Sender> {
  const waiting = new Map<number, () => void>();
  let next = 0;
  let closing = false;
  let worker: Worker | undefined;
  /** What the worker was last told of this thread's load (a new worker is told at its start). */
  let busy = false;

  const spawn = (): Promise<void> => {
    // Its own heap is bounded too (docs/adr/0017): a thread's isolate would otherwise take the process's
    // limits again, beside the serving thread's, inside the one container limit.
    const w = new Worker(new URL(import.meta.url), { workerData: { [MARK]: setup }, resourceLimits: WORKER_HEAP });
    return new Promise<void>((resolve, reject) => {
      w.on("message", (m: FromWorker) => {
        if (m.type === "ready") resolve();
        else if (m.type === "failed") reject(new Error(`webhook worker: ${m.message}`));
        else if (m.type === "done") waiting.get(m.id)?.();
        else for (const [result, count] of Object.entries(m.counts)) onSent(result as SendResult, count);
      });
      w.on("error", (error) => {
        log.error({ err: error }, "webhook worker failed");
        reject(error);
      });
      w.once("exit", () => {
        if (worker === w) worker = undefined;
        for (const done of waiting.values()) done();
        if (closing) return;
        log.warn("webhook worker stopped; starting another in a second");
        setTimeout(() => void spawn().catch((error: unknown) => log.error({ err: error }, "could not start a webhook worker")), 1_000).unref();
      });
      // The worker alone keeps no process alive: the server does, while it serves.
      w.unref();
      worker = w;
      if (busy) w.postMessage({ type: "load", busy } satisfies ToWorker);
    });
  };
  await spawn();
  let loop = performance.eventLoopUtilization();
  const sampling = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busyNow = performance.eventLoopUtilization(now, loop).utilization >= BUSY_LOOP;
    loop = now;
    if (busyNow !== busy) worker?.postMessage({ type: "load", busy: (busy = busyNow) } satisfies ToWorker);
  }, LOAD_SAMPLE_MS).unref();
  const ask = (type: "drain" | "close") => {
    const w = worker;
    if (!w) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const id = next++;
      waiting.set(id, () => {
        waiting.delete(id);
        resolve();
      });
      w.postMessage({ type, id } satisfies ToWorker);
    });
  };
  return {
    drain: () => ask("drain"),
    heapBytes: async () => (worker ? (await worker.getHeapStatistics()).total_heap_size : 0),
    async close() {
      closing = true;
      clearInterval(sampling);
      const w = worker;
      await ask("close");
      await w?.terminate();
    },
  };
}

/** The worker's side: the sender, and the answers to the thread that started it. */
async function runWorker(setup: WebhookWorkerSetup): Promise<void> {
  const port = parentPort!;
  const log = createLogger({ level: setup.logLevel, secrets: setup.secrets });
  try {
    setPriority(0, NICE); // pid 0: the calling thread
  } catch (error) {
    log.warn({ err: error }, "could not lower the webhook sender's priority; it competes with requests for the CPU");
  }
  const db = openPostgres({ connectionString: setup.connectionString, log, timeoutMs: setup.timeoutMs, max: 2, name: "keyplane-webhooks", planEachTime: true });
  const settings = { allowHttp: setup.allowHttp, allowPrivate: setup.allowPrivate, resolve: systemResolver };
  let counts: Partial<Record<SendResult, number>> = {};
  let hostBusy = false;
  const sender = new WebhookSender({
    db, sealer: createSealer(Buffer.from(setup.masterKey)), client: httpWebhookClient(settings, { maxSockets: 32 }), clock: () => new Date(), log,
    onResult: (result) => void (counts[result] = (counts[result] ?? 0) + 1), yieldTo: () => hostBusy,
  });
  const report = () => {
    if (Object.keys(counts).length === 0) return;
    port.postMessage({ type: "sent", counts } satisfies FromWorker);
    counts = {};
  };
  const reporting = setInterval(report, 1_000);
  port.on("message", (m: ToWorker) => {
    if (m.type === "load") return void (hostBusy = m.busy);
    const done = () => port.postMessage({ type: "done", id: m.id } satisfies FromWorker);
    if (m.type === "drain") void sender.drain().then(report).finally(done);
    else {
      clearInterval(reporting);
      void sender.close().then(report).then(() => db.close()).finally(done);
    }
  });
  try {
    await sender.start();
    port.postMessage({ type: "ready" } satisfies FromWorker);
  } catch (error) {
    port.postMessage({ type: "failed", message: error instanceof Error ? error.message : String(error) } satisfies FromWorker);
  }
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[MARK]) void runWorker((workerData as Record<string, WebhookWorkerSetup>)[MARK]!);
