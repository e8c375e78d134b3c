import type { StoredKey } from "../../domain/model.ts";
import type { Queryable } from "../../store/database.ts";
import { StoreUnavailable } from "../../domain/errors.ts";
import { keyInsertUnlessExists, type NewKey } from "../../store/keys/keys.ts";

/** At most this many keys go to the database in one statement. */
export const MAX_BATCH = 64;

interface Pending {
  key: NewKey;
  resolve: (stored: StoredKey | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Provisioning's inserts, gathered: the keys asked for during one turn of the event loop go to the
 * database as one statement (docs/adr/0007-provisioning-cost.md). PostgreSQL's cost of a statement and
 * of a commit, and this process's cost of a round trip, are then paid once for many keys. A request
 * waits for no timer: a lone key leaves at the end of the turn that asked for it.
 *
 * Each key's answer is what inserting it alone would have given: the new key, or undefined when its
 * name is taken (of two keys of one name in a batch, the first wins). A key that breaks a constraint
 * (its scope deleted meanwhile) fails the statement, so then each key of the batch is tried alone and
 * gets its own answer.
 */
export class KeyInserts {
  readonly #db: Queryable;
  #pending: Pending[] = [];

  constructor(db: Queryable) {
    this.#db = db;
  }

  insert(key: NewKey): Promise<StoredKey | undefined> {
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ key, resolve, reject }) === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#pending;
    this.#pending = [];
    for (let i = 0; i < batch.length; i += MAX_BATCH) void this.#send(batch.slice(i, i + MAX_BATCH));
  }

  async #send(batch: Pending[]): Promise<void> {
    try {
      const stored = await keyInsertUnlessExists(this.#db, batch.map((p) => p.key));
      batch.forEach((p, i) => p.resolve(stored[i]));
    } catch (error) {
      if (batch.length === 1 || error instanceof StoreUnavailable) for (const p of batch) p.reject(error);
      else for (const p of batch) void this.#send([p]);
    }
  }
}
