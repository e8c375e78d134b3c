import { performance } from "node:perf_hooks";
import { LRUCache } from "lru-cache";
import { AppError } from "../domain/errors.ts";

// Failed-authentication throttling (docs/gateways.md, "Throttling"): a client whose failed
// authentications exceed `failuresPerMinute` within a sliding minute is throttled until its rate falls
// back under it. Per process, in bounded memory: at most `capacity` clients are remembered (the least
// recently failing go first), each with at most failuresPerMinute + 1 failure times.
const WINDOW_MS = 60_000;

export interface ThrottleOptions {
  failuresPerMinute: number;
  /** How many clients are remembered at most. */
  capacity?: number;
  /** The clock, in milliseconds. */
  now?: () => number;
}

/** A throttled client's answer: 429 rate_limited, and when to try again. */
export class Throttled extends AppError {
  /** Whole seconds, 1 to 60: when the client's rate will have fallen back under the limit. */
  readonly retryAfter: number;

  constructor(retryAfter: number) {
    super("rate_limited", "Too many failed authentications from this client; try again later.");
    this.retryAfter = retryAfter;
  }
}

export class Throttle {
  readonly #limit: number;
  readonly #now: () => number;
  /** Each client's recent failure times, oldest first. */
  readonly #failures: LRUCache<string, number[]>;

  constructor({ failuresPerMinute, capacity = 10_000, now = () => performance.now() }: ThrottleOptions) {
    this.#limit = failuresPerMinute;
    this.#now = now;
    this.#failures = new LRUCache({ max: capacity });
  }

  /** A failed authentication by `client`. */
  fail(client: string): void {
    const now = this.#now();
    const times = this.#recent(client, now) ?? [];
    times.push(now);
    // Only the last limit + 1 failures decide whether the client is over the limit.
    if (times.length > this.#limit + 1) times.splice(0, times.length - this.#limit - 1);
    this.#failures.set(client, times);
  }

  /** Undefined when `client` is not throttled; else the whole seconds until it no longer is. */
  retryAfter(client: string): number | undefined {
    const now = this.#now();
    const times = this.#recent(client, now);
    if (!times || times.length <= this.#limit) return undefined;
    // Under the limit again once the oldest failure that puts it over has left the window.
    const until = times[times.length - this.#limit - 1]! + WINDOW_MS;
    return Math.min(60, Math.max(1, Math.ceil((until - now) / 1000)));
  }

  /** How many clients are remembered. */
  get size(): number {
    return this.#failures.size;
  }

  /** A client's failures within the window, the older ones dropped. */
  #recent(client: string, now: number): number[] | undefined {
    const times = this.#failures.get(client);
    if (!times) return undefined;
    // At once, not one shift() at a time: under a flood with a high limit a client holds hundreds of
    // thousands of times, and shifting each out copies the rest (seconds of CPU on every request).
    let expired = 0;
    while (expired < times.length && times[expired]! <= now - WINDOW_MS) expired++;
    if (expired > 0) times.splice(0, expired);
    return times;
  }
}
