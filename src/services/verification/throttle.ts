import { performance } from "node:perf_hooks";
import { LRUCache } from "lru-cache";
import { AppError } from "../../domain/errors.ts";
import { parseAddress } from "../../domain/policy/restrictions/cidr.ts";

// Failed-authentication throttling (docs/gateways.md, "Throttling"): a client whose failed
// authentications exceed `failuresPerMinute` within a sliding minute is throttled until its rate falls
// back under it. Per process, in bounded memory: at most `capacity` clients are remembered (the least
// recently failing go first), each with its failures of the last minute, of which only the last
// failuresPerMinute + 1 count (and no more than as many again wait to be dropped). An IPv6 client is
// counted by its /64: a /64 is one host's (or one link's), and the host may send from any address in
// it, so counting addresses would give it 2^64 budgets.
const WINDOW_MS = 60_000;

/** Who a client's failures are counted against: an IPv4 address (also IPv4-mapped), or an IPv6 address's /64. */
export function countedAs(client: string): string {
  if (!client.includes(":")) return client; // IPv4, the common case, without parsing
  const address = parseAddress(client);
  if (!address) return client;
  if (address.family === 4) return [24, 16, 8, 0].map((shift) => (address.value >>> shift) & 255).join(".");
  const groups = [48n, 32n, 16n, 0n].map((shift) => ((address.value >> (64n + shift)) & 0xffffn).toString(16));
  return `${groups.join(":")}::/64`;
}

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

/** A client's failure times, oldest first: those before `head` have left the window or no longer count. */
interface Failures {
  times: number[];
  head: number;
}

export class Throttle {
  readonly #limit: number;
  readonly #now: () => number;
  readonly #failures: LRUCache<string, Failures>;

  constructor({ failuresPerMinute, capacity = 10_000, now = () => performance.now() }: ThrottleOptions) {
    this.#limit = failuresPerMinute;
    this.#now = now;
    this.#failures = new LRUCache({ max: capacity });
  }

  /** A failed authentication by the client at `address`. */
  fail(address: string): void {
    const client = countedAs(address);
    const now = this.#now();
    let failures = this.#recent(client, now);
    if (!failures) this.#failures.set(client, (failures = { times: [], head: 0 }));
    failures.times.push(now);
    // Only the last limit + 1 failures decide whether the client is over the limit.
    failures.head = Math.max(failures.head, failures.times.length - this.#limit - 1);
    compact(failures);
  }

  /** Undefined when `address` is not throttled; else the whole seconds until it no longer is. */
  retryAfter(address: string): number | undefined {
    const client = countedAs(address);
    const now = this.#now();
    const failures = this.#recent(client, now);
    if (!failures || failures.times.length - failures.head <= this.#limit) return undefined;
    // Under the limit again once the oldest failure that puts it over has left the window.
    const until = failures.times[failures.times.length - this.#limit - 1]! + WINDOW_MS;
    return Math.min(60, Math.max(1, Math.ceil((until - now) / 1000)));
  }

  /** How many clients are remembered. */
  get size(): number {
    return this.#failures.size;
  }

  /** A client's failures, those that have left the window passed over. */
  #recent(client: string, now: number): Failures | undefined {
    const failures = this.#failures.get(client);
    if (!failures) return undefined;
    const { times } = failures;
    while (failures.head < times.length && times[failures.head]! <= now - WINDOW_MS) failures.head++;
    compact(failures);
    return failures;
  }
}

/**
 * Drops the failures that no longer count once they are half of the list: dropping them one at a time
 * copied the rest each time, which under a flood with a high limit (hundreds of thousands of times
 * per client) cost more than the rest of a refusal. So each time is copied at most once, on average.
 */
function compact(failures: Failures): void {
  if (failures.head > failures.times.length >> 1) {
    failures.times.splice(0, failures.head);
    failures.head = 0;
  }
}
