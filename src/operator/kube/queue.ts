// The work queue of the reconciler, after client-go's: a key is queued at most once, never processed
// by two workers at once (an add while it is processed runs it again afterwards), a failure comes back
// after an exponential backoff, and a delayed add keeps the earliest due time.

/**
 * What processing a key asks for next: nothing, another go after the key's backoff, or another go
 * after a delay of its own (a time the key waits for, such as a rotation's).
 */
export type ProcessResult = "done" | "retry" | { requeueAfterMs: number };

/** The longest delay a timer takes: a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface BackoffOptions {
  /** The first delay; each further failure in a row doubles it. */
  baseMs: number;
  maxMs: number;
  /** Up to this fraction is added at random, so that keys failing together do not retry together. */
  jitter?: number;
}

export interface QueueOptions {
  /** How many keys are processed at once. */
  concurrency: number;
  backoff: BackoffOptions;
  process: (key: string) => Promise<ProcessResult>;
  /** Called with what `process` threw; the key is then retried after its backoff. */
  onError?: (key: string, error: unknown) => void;
}

export function backoffDelay(failures: number, { baseMs, maxMs, jitter = 0 }: BackoffOptions, random = Math.random): number {
  const exact = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exact * (1 + jitter * random()));
}

export class WorkQueue {
  readonly #options: QueueOptions;
  readonly #order: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  /** Added while being processed: runs again once that is over. */
  readonly #dirty = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<string, number>();
  #idle: Array<() => void> = [];
  #stopped = false;

  constructor(options: QueueOptions) {
    this.#options = options;
  }

  /** Queues `key` now. */
  add(key: string): void {
    if (this.#stopped) return;
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#order.push(key);
    this.#pump();
  }

  /** Queues `key` after `ms`, unless it is already due sooner. */
  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    if (ms <= 0) return this.add(key);
    ms = Math.min(ms, MAX_TIMER_MS);
    const at = Date.now() + ms;
    const pending = this.#timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Queues `key` after its backoff, which doubles with each failure in a row. */
  retry(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const delay = backoffDelay(failures, this.#options.backoff);
    this.addAfter(key, delay);
    return delay;
  }

  /** Forgets `key`'s failures: its next retry starts from the base delay. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Keys waiting or being processed (not those waiting for a timer). */
  get length(): number {
    return this.#queued.size + this.#processing.size;
  }

  /** Resolves once no key is waiting or being processed. */
  idle(): Promise<void> {
    if (this.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Takes no more work, drops what waits, and resolves when the keys being processed are done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const key of this.#order.splice(0)) this.#queued.delete(key);
    this.#dirty.clear();
    await this.idle();
  }

  #pump(): void {
    while (!this.#stopped && this.#processing.size < this.#options.concurrency && this.#order.length > 0) {
      const key = this.#order.shift() as string;
      this.#queued.delete(key);
      this.#processing.add(key);
      // Whatever was scheduled for it is being done now; the outcome schedules what comes next.
      const pending = this.#timers.get(key);
      if (pending) {
        clearTimeout(pending.timer);
        this.#timers.delete(key);
      }
      void this.#run(key);
    }
    this.#notifyIdle();
  }

  async #run(key: string): Promise<void> {
    let outcome: ProcessResult;
    try {
      outcome = await this.#options.process(key);
    } catch (error) {
      this.#options.onError?.(key, error);
      outcome = "retry";
    }
    this.#processing.delete(key);
    if (!this.#stopped) {
      if (outcome === "retry") this.retry(key);
      else this.forget(key);
      if (typeof outcome === "object") this.addAfter(key, outcome.requeueAfterMs);
      if (this.#dirty.delete(key)) this.add(key);
    }
    this.#pump();
  }

  #notifyIdle(): void {
    if (this.length > 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}
