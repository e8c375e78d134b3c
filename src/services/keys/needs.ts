// The keys room: provisioning, reading, changing, rotating and deleting keys, their events, the
// operator's claims on them, the expiry sweep and the notifications of key changes. It may use domain/,
// store/ (keys/, policy/), the policy room (credits, chains) and the verification room's key cache.
import type { Sealer } from "../../domain/seal.ts";
import type { Database } from "../../store/database.ts";
import type { Metrics } from "../operations/metrics.ts";
import type { PolicyChains } from "../policy/policy-chain.ts";
import type { KeyCache } from "../verification/key-cache.ts";
import type { KeyInserts } from "./key-inserts.ts";

/** What the keys room's use cases run with: injected, so tests control the clock and the store. */
export interface KeysNeeds {
  db: Database;
  sealer: Sealer;
  /** Emptied of a key that changes, in this process at once (others hear of it on `keyplane_keys`). */
  keyCache: KeyCache;
  /** New keys, gathered into one statement per turn of the event loop. */
  keyInserts: KeyInserts;
  /** The policies that bind each key (docs/api.md, "Key policy"): forgotten when a key's policy changes. */
  policies: PolicyChains;
  /** The Prometheus metrics; absent where nothing serves them. */
  metrics?: Metrics;
  clock: () => Date;
}
