import { once } from "node:events";
import { setPriority } from "node:os";
import { isMainThread, parentPort, Worker, workerData, type MessagePort } from "node:worker_threads";
import type { Logger } from "pino";
import type { KeyAction } from "./domain/keys/key-event.ts";
import { createSealer } from "./domain/seal.ts";
import { failureLine, importStream, type AnswerSink, type ImportRequest } from "./http/import/import-stream.ts";
import type { ImportRunner } from "./http/import/import-routes.ts";
import { createLogger } from "./logging.ts";
import type { ImportNeeds } from "./services/import/needs.ts";
import { openPostgres } from "./store/postgres.ts";
import { liftSemiSpaceFlags } from "./worker-heap.ts";

// On PostgreSQL, `keyplane serve` imports keys on a worker thread of its own (docs/migration.md, "How
// it is written"), at the lowest priority, as webhooks are sent (src/webhook-worker.ts): the thread
// that answers /auth only passes the body's bytes in and the answer's text out. Reading, checking and
// sealing a million lines, and collecting the garbage they leave, happen on the worker's own heap,
// and when the cores are all busy, requests go first. Started with the first import, it stops when
// the last one ends.
const NICE = 19;
/** The worker's heap: at most some 3,000 lines in flight (import-stream.ts), and the statements of two groups. */
const WORKER_HEAP = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 };
/** Bytes of the body passed in and not yet taken, and of the answer passed out and not yet written, before either side waits. */
const AHEAD_BYTES = 256 * 1024;

export interface ImportWorkerSetup {
  connectionString: string;
  timeoutMs: number;
  masterKey: Uint8Array;
  logLevel: string;
  /** What the worker's log lines must never hold (the admin token). */
  secrets: string[];
}

/** What the serving thread does on the worker's behalf: its caches and metrics are there. */
export type ImportEffects = Pick<ImportNeeds, "keyCache" | "pathScopes" | "metrics">;

type ToWorker =
  | { type: "start"; id: number; request: ImportRequest }
  | { type: "close" }
  | { type: "body"; id: number; chunk: Uint8Array }
  | { type: "end"; id: number }
  | { type: "gone"; id: number }
  | { type: "written"; id: number; bytes: number; alive: boolean };
type FromWorker =
  | { type: "ready" }
  | { type: "answer"; id: number; text: string }
  | { type: "took"; id: number; bytes: number }
  | { type: "done"; id: number }
  | { type: "forgetUnknown" }
  | { type: "clearPathScopes" }
  | { type: "invalidate"; hash: string }
  | { type: "events"; action: KeyAction; count: number };

const MARK = "keyplane-import-worker";

/** A count of bytes that one side waits on until the other has taken enough of them. */
class Ahead {
  #bytes = 0;
  #waiting: (() => void) | undefined;

  add(bytes: number): Promise<void> | undefined {
    this.#bytes += bytes;
    if (this.#bytes <= AHEAD_BYTES) return undefined;
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  take(bytes: number): void {
    this.#bytes -= bytes;
    if (this.#bytes <= AHEAD_BYTES) this.release();
  }

  release(): void {
    this.#waiting?.();
    this.#waiting = undefined;
  }
}

interface Running {
  sink: AnswerSink;
  /** The answer's chunks are written in order, each once the one before is. */
  written: Promise<void>;
  body: Ahead;
  done: () => void;
}

/** The serving thread's side: an ImportRunner that runs each import on the worker, started when needed. */
export function importWorkerRunner(setup: ImportWorkerSetup, effects: ImportEffects, log: Logger): ImportRunner {
  let worker: Worker | undefined;
  const running = new Map<number, Running>();
  let next = 0;

  const onMessage = (w: Worker, ready: () => void) => (m: FromWorker) => {
    if (m.type === "ready") return ready();
    if (m.type === "forgetUnknown") return effects.keyCache.forgetUnknown();
    if (m.type === "clearPathScopes") return effects.pathScopes.clear();
    if (m.type === "invalidate") return effects.keyCache.invalidate(m.hash);
    if (m.type === "events") return effects.metrics?.keyEvents(m.action, m.count);
    const run = running.get(m.id);
    if (!run) return;
    if (m.type === "took") return run.body.take(m.bytes);
    if (m.type === "done") return void run.written.then(run.done);
    const bytes = m.text.length;
    run.written = run.written.then(async () => {
      const alive = await run.sink.write(m.text);
      w.postMessage({ type: "written", id: m.id, bytes, alive } satisfies ToWorker);
    });
  };

  const start = (): Worker => {
    // Its own heap is bounded (docs/adr/0017), and so is what it holds of a file (WORKER_HEAP); its
    // young generation too, with the process's semi-space flags lifted while it starts.
    const restoreFlags = liftSemiSpaceFlags();
    const w = new Worker(new URL(import.meta.url), { workerData: { [MARK]: setup }, resourceLimits: WORKER_HEAP });
    w.on("message", onMessage(w, restoreFlags));
    w.on("error", (error) => log.error({ err: error }, "import worker failed"));
    w.once("exit", () => {
      restoreFlags();
      if (worker === w) worker = undefined;
      // An import the worker did not finish (it failed) ends with the error line its answer lacks.
      for (const [id, run] of running) {
        running.delete(id);
        run.body.release();
        void run.written.then(() => run.sink.write(failureLine(new Error("the import worker stopped")))).then(run.done);
      }
    });
    return w;
  };

  return async (request, body, sink) => {
    const w = (worker ??= start());
    const id = next++;
    const { promise: finished, resolve: done } = Promise.withResolvers<void>();
    const run: Running = { sink, written: Promise.resolve(), body: new Ahead(), done };
    running.set(id, run);
    w.postMessage({ type: "start", id, request } satisfies ToWorker);
    try {
      for await (const chunk of body) {
        if (!running.has(id)) break;
        // A copy of its bytes alone, handed over: the chunk may be a view of a larger buffer of the socket's.
        const bytes = new Uint8Array(chunk);
        w.postMessage({ type: "body", id, chunk: bytes } satisfies ToWorker, [bytes.buffer]);
        await run.body.add(chunk.length);
      }
      w.postMessage({ type: "end", id } satisfies ToWorker);
    } catch {
      // The client went: the worker writes what it sent whole, and answers nobody.
      w.postMessage({ type: "gone", id } satisfies ToWorker);
    }
    await finished;
    running.delete(id);
    // The last import done: the worker closes its pool and ends; the next import starts another.
    if (running.size === 0 && worker === w) {
      worker = undefined;
      w.postMessage({ type: "close" } satisfies ToWorker);
      await once(w, "exit");
    }
  };
}

/** A body arriving in messages, as the chunks of an async iterable. */
class Inbox implements AsyncIterable<Buffer> {
  readonly #chunks: Buffer[] = [];
  #ended = false;
  #gone = false;
  #wake: (() => void) | undefined;
  readonly #took: (bytes: number) => void;

  constructor(took: (bytes: number) => void) {
    this.#took = took;
  }

  get gone() {
    return this.#gone;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#poke();
  }

  end(gone: boolean): void {
    this.#ended = true;
    this.#gone = gone;
    this.#poke();
  }

  #poke(): void {
    this.#wake?.();
    this.#wake = undefined;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.#chunks.shift();
      if (chunk) {
        this.#took(chunk.length);
        yield chunk;
      } else if (this.#gone) {
        throw new Error("the client went away");
      } else if (this.#ended) {
        return;
      } else {
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    }
  }
}

/** The worker's side: each import's stream, on a pool of its own. */
function runWorker(setup: ImportWorkerSetup): void {
  const port: MessagePort = parentPort!;
  const post = (m: FromWorker) => port.postMessage(m);
  post({ type: "ready" });
  const log = createLogger({ level: setup.logLevel, secrets: setup.secrets });
  try {
    setPriority(0, NICE); // pid 0: the calling thread
  } catch (error) {
    log.warn({ err: error }, "could not lower the import's priority; it competes with requests for the CPU");
  }
  // Two connections: a group is read while the one before is written (services/import/import-keys.ts).
  const db = openPostgres({ connectionString: setup.connectionString, log, timeoutMs: setup.timeoutMs, max: 2, name: "keyplane-import" });
  const needs: ImportNeeds = {
    db, sealer: createSealer(Buffer.from(setup.masterKey)), clock: () => new Date(), log,
    keyCache: { forgetUnknown: () => post({ type: "forgetUnknown" }), invalidate: (hash) => post({ type: "invalidate", hash }) },
    pathScopes: { clear: () => post({ type: "clearPathScopes" }) },
    metrics: { keyEvents: (action, count = 1) => post({ type: "events", action, count }) },
  };
  /** Each import under way: its body as it comes, and how far its answer is ahead of the writing of it. */
  const imports = new Map<number, { inbox: Inbox; answer: { ahead: Ahead; alive: boolean } }>();
  port.on("message", (m: ToWorker) => {
    if (m.type === "close") {
      void db.close().finally(() => process.exit(0));
    } else if (m.type === "start") {
      const inbox = new Inbox((bytes) => post({ type: "took", id: m.id, bytes }));
      const answer = { ahead: new Ahead(), alive: true };
      imports.set(m.id, { inbox, answer });
      const sink: AnswerSink = {
        get gone() {
          return inbox.gone || !answer.alive;
        },
        async write(text) {
          if (!answer.alive) return false;
          post({ type: "answer", id: m.id, text });
          await answer.ahead.add(text.length);
          return answer.alive;
        },
      };
      void importStream(needs, m.request, inbox, sink)
        .catch((error: unknown) => log.error({ err: error }, "import failed"))
        .finally(() => {
          imports.delete(m.id);
          post({ type: "done", id: m.id });
        });
    } else if (m.type === "body") {
      imports.get(m.id)?.inbox.push(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
    } else if (m.type === "end" || m.type === "gone") {
      imports.get(m.id)?.inbox.end(m.type === "gone");
    } else {
      const answer = imports.get(m.id)?.answer;
      if (!answer) return;
      answer.alive &&= m.alive;
      answer.ahead.take(m.bytes);
      if (!answer.alive) answer.ahead.release();
    }
  });
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[MARK]) runWorker((workerData as Record<string, ImportWorkerSetup>)[MARK]!);
