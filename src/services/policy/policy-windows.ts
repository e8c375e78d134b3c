import { windowsPrune } from "../../store/policy/policy-counters.ts";
import type { PolicyNeeds } from "./needs.ts";

// Rate-limit windows that are over leave their rows behind (docs/adr/0013): each process deletes them
// now and then; several doing so at once only find less to delete.
export const WINDOWS_PRUNE_MS = 60_000;

export async function pruneWindows(ctx: Pick<PolicyNeeds, "db" | "clock" | "log">): Promise<void> {
  const deleted = await windowsPrune(ctx.db, Math.floor(ctx.clock().getTime() / 1000));
  if (deleted > 0) ctx.log.debug({ deleted }, "pruned rate-limit windows that are over");
}
