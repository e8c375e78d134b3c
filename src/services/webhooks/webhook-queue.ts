import type { Queryable } from "../../store/database.ts";
import { deliveryPrune, deliveryQueueStats } from "../../store/webhooks/webhook-deliveries.ts";
import type { ExpiryNotices } from "./webhook-notices.ts";

// The outbox as operations see it (docs/webhooks.md, "Operations"): how much waits, for how long, and
// how long what is done is kept.

/** Delivered and failed deliveries are kept this long, for GET .../deliveries; then deleted. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;
export const WEBHOOK_PRUNE_MS = 3_600_000;
const PRUNE_BATCH = 10_000;

interface Deps {
  db: Queryable;
  clock: () => Date;
}

/** Deliveries not yet delivered nor failed, and the age of the oldest, in seconds. */
export async function webhookQueue({ db, clock }: Deps): Promise<{ pending: number; oldestSeconds: number }> {
  const stats = await deliveryQueueStats(db);
  return { pending: stats.pending, oldestSeconds: stats.oldest ? Math.max(0, (clock().getTime() - stats.oldest.getTime()) / 1000) : 0 };
}

/** Deletes the deliveries done for longer than the retention, a batch at a time, and notices no longer due. */
export async function pruneWebhookRecords(deps: Deps, notices: ExpiryNotices): Promise<void> {
  const before = new Date(deps.clock().getTime() - DELIVERY_RETENTION_MS);
  while ((await deliveryPrune(deps.db, before, PRUNE_BATCH)) === PRUNE_BATCH);
  await notices.prune();
}
