// analytics/ of services/: usage analytics (docs/analytics.md): verdicts counted in memory on the
// request's path (usage-counter.ts), written in one statement at least every 10 s and at shutdown
// (usage-writer.ts), partitions made ahead and dropped past their retention (usage-upkeep.ts), read for
// the REST routes (usage-reads.ts). It may use domain/ and store/ (analytics/); it takes what it needs.

import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { Retention } from "../../domain/analytics/retention.ts";
import type { Queryable } from "../../store/database.ts";

/** What the analytics room needs of the process. */
export interface AnalyticsNeeds {
  db: Queryable;
  clock: () => Date;
  log: Logger;
  /** How long minutes, hours and days are kept (KEYPLANE_ANALYTICS_RETENTION). */
  retention: Retention;
  /** Where the writer's metrics go; absent where nothing serves metrics. */
  registry?: Registry | undefined;
}

/** How often each process writes what it counted (at most this much is lost when it is killed). */
export const ANALYTICS_WRITE_MS = 10_000;
/** How often partitions are made ahead and old ones removed. */
export const ANALYTICS_UPKEEP_MS = 3_600_000;
