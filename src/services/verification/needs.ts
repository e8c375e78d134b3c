// The verification room: authentication of a key (REST, POST /verify, /auth), its caches (keys by token
// hash, what platform paths name) and their invalidation, the throttle of failed attempts, last use. It
// may use domain/, store/, and the directory and policy rooms (paths resolved, policy chains judged).
import type { Logger } from "pino";
import type { Database } from "../../store/database.ts";
import type { Metrics } from "../operations/metrics.ts";
import type { PolicyChains } from "../policy/policy-chain.ts";
import type { PolicyMeter } from "../policy/policy-meter.ts";
import type { KeyCache } from "./key-cache.ts";
import type { LastUse } from "./last-use.ts";
import type { PathScopeCache } from "./path-scope-cache.ts";
import type { Throttle } from "./throttle.ts";
import type { UsageCounter } from "../analytics/usage-counter.ts";

/** What verification runs with: injected, so tests control the clock and the caches. */
export interface VerificationNeeds {
  db: Database;
  keyCache: KeyCache;
  /** When keys were last used, kept in memory and written in batches. */
  lastUse: LastUse;
  /** Failed authentications by client, for throttling. */
  throttle: Throttle;
  /** What platform paths name, for /auth and POST /verify. */
  pathScopes: PathScopeCache;
  /** The policies that bind each key (docs/api.md, "Key policy"). */
  policies: PolicyChains;
  /** This process's leases of rate limits and credits (docs/adr/0013). */
  meter: PolicyMeter;
  /** Usage analytics' counts of verdicts (docs/analytics.md); absent when analytics are off. */
  analytics?: UsageCounter;
  /** The Prometheus metrics; absent where nothing serves them. */
  metrics?: Metrics;
  clock: () => Date;
  log: Logger;
}
