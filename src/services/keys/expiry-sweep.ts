import { keyRecordExpiries } from "../../store/keys/keys.ts";
import type { KeysNeeds } from "./needs.ts";

// The sweep records the `expired` event of each key whose expiry has passed (docs/api.md, "Events"),
// within a minute of it. Every process runs it; each claims rows with SKIP LOCKED and records only
// keys not yet recorded, so running it on several processes at once records each expiry once.
// Nothing waits for the sweep to refuse an expired key: every check compares expiresAt with the clock.
export const EXPIRY_SWEEP_MS = 20_000;
const BATCH = 1_000;

/** Records every due expiry; returns how many. */
export async function sweepExpiries(ctx: Pick<KeysNeeds, "db" | "clock" | "metrics">): Promise<number> {
  let total = 0;
  for (;;) {
    const recorded = await keyRecordExpiries(ctx.db, { sql: "true", params: [] }, ctx.clock(), { limit: BATCH, skipLocked: true });
    total += recorded;
    ctx.metrics?.keyEvents("expired", recorded);
    if (recorded < BATCH) return total;
  }
}
