import { migrationsApplied } from "../../store/migrate.ts";
import type { Context } from "../context.ts";

/** Ready to serve: the database answers and holds every migration this release knows (GET /readyz). */
export function isReady(ctx: Context): Promise<boolean> {
  return migrationsApplied(ctx.db, ctx.migrations).catch(() => false);
}
