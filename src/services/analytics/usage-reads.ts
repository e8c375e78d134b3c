import { badRequest } from "../../domain/errors.ts";
import { filledBuckets, rangeOf, type Range, type RangeQuery } from "../../domain/analytics/range.ts";
import type { Bucket } from "../../domain/analytics/usage.ts";
import type { Lineage } from "../../domain/keys/lineage.ts";
import { usageListByLineage, usageListByScope, usageTopByScope, type TopKey, type UsageWhere } from "../../store/analytics/usage-reads.ts";
import type { AnalyticsNeeds } from "./needs.ts";

// Reading usage analytics (docs/api.md, "Analytics"): one key's buckets, under its lineage so that a
// rotated key's history goes on; a scope's buckets summed over every key it may manage, deleted and
// expired ones included, with its most used keys. Who may read what is the caller's to settle first.

export type AnalyticsNeedsToRead = Pick<AnalyticsNeeds, "db" | "clock" | "retention">;

export interface KeyAnalytics extends Range {
  buckets: Bucket[];
}

export interface ScopeAnalytics extends KeyAnalytics {
  top: TopKey[];
}

function range(needs: AnalyticsNeedsToRead, query: RangeQuery): Range {
  const r = rangeOf(query, needs.clock(), needs.retention);
  if (typeof r === "string") throw badRequest(r);
  return r;
}

/** A key's buckets over the range the query asks for (a 400 for a range refused). */
export async function keyAnalytics(needs: AnalyticsNeedsToRead, key: Lineage, query: RangeQuery): Promise<KeyAnalytics> {
  const r = range(needs, query);
  return { ...r, buckets: filledBuckets(r, await usageListByLineage(needs.db, r.interval, key.lineage, r.from, r.to)) };
}

/** The buckets of every key of `where`, summed, and the `top` keys with the most requests in the range. */
export async function scopeAnalytics(needs: AnalyticsNeedsToRead, where: UsageWhere, query: RangeQuery & { top: number }): Promise<ScopeAnalytics> {
  const r = range(needs, query);
  const [buckets, top] = await Promise.all([
    usageListByScope(needs.db, r.interval, where, r.from, r.to),
    usageTopByScope(needs.db, r.interval, where, r.from, r.to, query.top),
  ]);
  return { ...r, buckets: filledBuckets(r, buckets), top };
}
