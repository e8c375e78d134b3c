// The leaks room (docs/leaks.md): a scanner's reports of tokens found in public, checked against
// GitHub's signing keys, each live key acted on by its leak policy. It may use domain/, store/ (leaks/,
// keys/, policy/), the keys room (a rotation or a disabling is a change to the key) and the key cache.
import type { Logger } from "pino";
import type { LeakPolicy } from "../../domain/policy/policy.ts";
import type { Sealer } from "../../domain/seal.ts";
import type { Database } from "../../store/database.ts";
import type { Metrics } from "../operations/metrics.ts";
import type { KeyCache } from "../verification/key-cache.ts";
import type { GithubKeys } from "./github-keys.ts";

/** What a leak policy falls back to, and how long a rotated key keeps working (KEYPLANE_LEAK_*). */
export interface LeakSettings {
  policy: LeakPolicy;
  graceSeconds: number;
}

/** What the leaks room's use cases run with. */
export interface LeaksNeeds {
  db: Database;
  keyCache: KeyCache;
  /** Seals the token of a key a leak rotates. */
  sealer: Sealer;
  /** What a leak report does where no policy says. */
  leaks: LeakSettings;
  /** GitHub's keys that sign secret scanning reports. */
  githubKeys: GithubKeys;
  /** The Prometheus metrics; absent where nothing serves them. */
  metrics?: Metrics;
  clock: () => Date;
  log: Logger;
}
