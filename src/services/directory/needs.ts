// The directory room (docs/api.md, "Directory"): customers, domains, applications, subscribers and
// users, what a platform path names, and an ApiKey's references resolved. It may use domain/, store/
// (directory/, keys/), the keys room (a user is created with its key) and the policy room's credits.
import type { Sealer } from "../../domain/seal.ts";
import type { Database } from "../../store/database.ts";

/** A cache of what the directory answers, emptied in this process when an entity is created or deleted. */
interface Clearable {
  clear(): void;
}

/** What the directory's use cases run with. */
export interface DirectoryNeeds {
  db: Database;
  /** Seals the token of a user's key. */
  sealer: Sealer;
  keyCache: Clearable;
  pathScopes: Clearable;
  clock: () => Date;
}
