// The policy room: key and entity policies, their chains, the checks a verification makes, the meter of
// rate limits and credits (leases, docs/adr/0013), credit balances and a key's usage. It may use domain/,
// store/ (policy/, keys/, directory/), the keys room (a policy is a change to a key) and the key cache.
import type { Logger } from "pino";
import type { Database } from "../../store/database.ts";
import type { Metrics } from "../operations/metrics.ts";
import type { KeyCache } from "../verification/key-cache.ts";
import type { PolicyChains } from "./policy-chain.ts";

/** What the policy room's use cases run with. */
export interface PolicyNeeds {
  db: Database;
  /** Emptied when a policy changes: a cached key carries its chain. */
  keyCache: KeyCache;
  /** The policies that bind each key (docs/api.md, "Key policy"). */
  policies: PolicyChains;
  /** The Prometheus metrics; absent where nothing serves them. */
  metrics?: Metrics;
  clock: () => Date;
  log: Logger;
}
