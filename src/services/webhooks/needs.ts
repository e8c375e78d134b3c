// The webhooks room (docs/webhooks.md): subscriptions, the outbox and its sender (attempts, retries,
// the client that makes them), notices (key.expiring, key.usage_exceeded). It may use domain/, store/
// (webhooks/, keys/) and the policy room's meter (a balance run out is a notice).
import type { Sealer } from "../../domain/seal.ts";
import type { Database } from "../../store/database.ts";
import type { WebhookSettings } from "./webhook-settings.ts";

/** What the webhooks room's use cases run with. */
export interface WebhooksNeeds {
  db: Database;
  /** Seals and unseals each webhook's signing secret. */
  sealer: Sealer;
  /** Where webhooks may send (docs/webhooks.md, "Addresses"). */
  webhooks: WebhookSettings;
  clock: () => Date;
}
