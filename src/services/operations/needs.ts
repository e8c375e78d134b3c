// The operations room (docs/operations.md): readiness, the Prometheus metrics, request durations, and
// the periodic work's timer. It may use domain/, store/ and the statistics the other rooms keep; every
// room may report to its metrics.
import type { Database } from "../../store/database.ts";
import type { Migration } from "../../store/migrate.ts";

/** What readiness runs with. */
export interface OperationsNeeds {
  db: Database;
  /** The migrations this release knows: all applied means the database is ready. */
  migrations: readonly Migration[];
}
