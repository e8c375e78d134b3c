import { INTERVALS } from "../../domain/analytics/usage.ts";
import { partitionsBetween, usagePartitionCreate, usagePartitionDrop, usagePartitionList } from "../../store/analytics/partitions.ts";
import type { AnalyticsNeeds } from "./needs.ts";

// The analytics tables' upkeep (docs/analytics.md, "Retention"), run at start and every hour by every
// process: the partitions of now and of the next day made ahead, so that writes find them; partitions
// wholly older than their grain's retention removed, without a DELETE and without making a write or a
// read wait (store/analytics/partitions.ts).
const AHEAD_MS = 86_400_000;

/** Makes the partitions ahead, then removes those past their retention; `known`: the partitions this process knows exist. */
export async function usageUpkeep(needs: AnalyticsNeeds, known: Set<string>): Promise<void> {
  const now = needs.clock().getTime();
  for (const interval of INTERVALS) {
    for (const p of partitionsBetween(interval, now, now + AHEAD_MS)) {
      if (known.has(p.name)) continue;
      await usagePartitionCreate(needs.db, p);
      known.add(p.name);
    }
  }
  for (const p of await usagePartitionList(needs.db)) {
    if (p.partition.to.getTime() > now - needs.retention[p.partition.interval]) continue;
    known.delete(p.partition.name);
    await usagePartitionDrop(needs.db, p);
    needs.log.info({ partition: p.partition.name }, "removed usage analytics past their retention");
  }
}
