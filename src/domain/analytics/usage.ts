// analytics/ of domain/: usage analytics' outcomes and buckets, the rules of a range, the retention's
// form. It may use domain/'s top files.
//
// What a verdict counts as, and the buckets of an answer (docs/analytics.md).

/** A verdict of /verify or /auth for a known key, as analytics counts it; the order of every counts array. */
export const OUTCOMES = ["valid", "restricted", "rateLimited", "usageExceeded", "forbidden", "disabled", "expired"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The index of each outcome in a counts array; the credits follow the outcomes. */
export const OUTCOME_INDEX = Object.fromEntries(OUTCOMES.map((o, i) => [o, i])) as Record<Outcome, number>;
export const CREDITS_INDEX = OUTCOMES.length;

/** One bucket of the answer: its start, a count per outcome, and the credits spent. */
export type Bucket = { start: Date; credits: number } & Record<Outcome, number>;

/** The buckets' grains: what `interval` names. */
export const INTERVALS = ["minute", "hour", "day"] as const;
export type Interval = (typeof INTERVALS)[number];

export const INTERVAL_MS: Record<Interval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** A bucket of all zeros starting at `start`. */
export function emptyBucket(start: Date): Bucket {
  return { start, valid: 0, restricted: 0, rateLimited: 0, usageExceeded: 0, forbidden: 0, disabled: 0, expired: 0, credits: 0 };
}

/** The requests a bucket counts: the sum of its outcomes. */
export function requestsOf(b: Record<Outcome, number>): number {
  let n = 0;
  for (const o of OUTCOMES) n += b[o];
  return n;
}

/** The outcome (its index) of each verdict code that names a key (docs/api.md, "Verification"). */
export const VERDICT_OUTCOMES: Readonly<Record<string, number>> = {
  VALID: OUTCOME_INDEX.valid, RESTRICTED: OUTCOME_INDEX.restricted, RATE_LIMITED: OUTCOME_INDEX.rateLimited,
  USAGE_EXCEEDED: OUTCOME_INDEX.usageExceeded, FORBIDDEN: OUTCOME_INDEX.forbidden, DISABLED: OUTCOME_INDEX.disabled, EXPIRED: OUTCOME_INDEX.expired,
};
