import type { Logger } from "pino";
import type { Sealer } from "../domain/seal.ts";
import type { Database } from "../store/database.ts";
import type { GithubKeys } from "./github-keys.ts";
import type { Migration } from "../store/migrate.ts";
import type { KeyCache } from "./key-cache.ts";
import type { KeyInserts } from "./key-inserts.ts";
import type { LastUse } from "./last-use.ts";
import type { LeakSettings } from "./leaks.ts";
import type { Metrics } from "./metrics.ts";
import type { PathScopeCache } from "./path-scope-cache.ts";
import type { PolicyChains } from "./policy-chain.ts";
import type { PolicyMeter } from "./policy-meter.ts";
import type { Throttle } from "./throttle.ts";
import type { UsageCounter } from "./analytics/usage-counter.ts";
import type { WebhookSettings } from "./webhook-settings.ts";

/** What every use case runs with: injected, so tests control the clock and the store. */
export interface Context {
  db: Database;
  sealer: Sealer;
  keyCache: KeyCache;
  /** New keys, gathered into one statement per turn of the event loop. */
  keyInserts: KeyInserts;
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
  /** What a leak report does where no policy says (docs/leaks.md). */
  leaks: LeakSettings;
  /** GitHub's keys that sign secret scanning reports. */
  githubKeys: GithubKeys;
  /** Where webhooks may send (docs/webhooks.md, "Addresses"). */
  webhooks: WebhookSettings;
  /** Usage analytics' counts of verdicts (docs/analytics.md); absent when analytics are off. */
  analytics?: UsageCounter;
  /** The Prometheus metrics; absent where nothing serves them. */
  metrics?: Metrics;
  clock: () => Date;
  log: Logger;
  /** The migrations this release knows: all applied means the database is ready. */
  migrations: readonly Migration[];
}
