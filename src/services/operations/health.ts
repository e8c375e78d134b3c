import { migrationsApplied } from "../../store/migrate.ts";
import type { OperationsNeeds } from "./needs.ts";

/** Ready to serve: the database answers and holds every migration this release knows (GET /readyz). */
export function isReady(ctx: OperationsNeeds): Promise<boolean> {
  return migrationsApplied(ctx.db, ctx.migrations).catch(() => false);
}
