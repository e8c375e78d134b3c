// The import and export of keys (docs/migration.md): use cases that move keys between keyplane and a
// platform that had them before. They use the store and domain/, and only what ImportNeeds names.
import type { Logger } from "pino";
import type { Author, KeyAction } from "../../domain/keys/key-event.ts";
import type { Sealer } from "../../domain/seal.ts";
import type { Database } from "../../store/database.ts";

/** What the import and export use: the store, the sealer, the clock, and the caches an imported key must get past. */
export interface ImportNeeds {
  db: Database;
  sealer: Sealer;
  clock: () => Date;
  log: Logger;
  /** The verification cache: an imported token it remembers as unknown must be looked up again. */
  keyCache: { invalidate(hash: string): void; forgetUnknown(): void };
  /** What platform paths name: an entity the import creates must be found at once. */
  pathScopes: { clear(): void };
  /** The Prometheus metrics (keyplane_key_events_total counts imported keys' events too); absent where nothing serves them. */
  metrics?: { keyEvents(action: KeyAction, count?: number): void } | undefined;
}

/** Entities that a line names and `createDirectory` may create. */
export type ImportedEntity = "customer" | "domain" | "application" | "subscriber" | "user";

export interface ImportOptions {
  /** Who the events name: actor import, and the request that carried the file. */
  by: Author;
  /** Create the customers, domains, applications, subscribers and users that lines name and that do not exist. */
  createDirectory: boolean;
  /** Why `name` cannot name a new entity of that kind; undefined when it can (the directory's own rules, as its paths take them). */
  creatable: (kind: ImportedEntity, name: string) => string | undefined;
}
