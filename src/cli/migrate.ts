import type { Config } from "../config.ts";
import { migrateDatabase } from "../keyplane.ts";
import { createLogger } from "../logging.ts";

/** `keyplane migrate`: applies pending migrations, says which, and exits. */
export async function migrateCommand(config: Config): Promise<void> {
  const applied = await migrateDatabase(config, createLogger({ level: config.logLevel }));
  process.stdout.write(applied.length ? `applied migrations: ${applied.join(", ")}\n` : "database is up to date\n");
}
