import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import type { Database } from "./database.ts";

// Forward-only, checksummed SQL migrations: migrations/NNNN_name.sql, each applied once in a
// transaction. An applied migration whose file has changed stops the start: history is not rewritten.
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const sql = await readFile(dir + file, "utf8");
      return {
        version: Number(file.slice(0, 4)),
        name: file.slice(5, -4),
        sql,
        checksum: createHash("sha256").update(sql).digest("hex"),
      };
    }),
  );
}

/** Applies the pending migrations; returns the versions applied. Safe with several processes at once. */
export async function migrate(db: Database, log: Logger, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  return db.transaction(async (tx) => {
    // One migrator at a time across every process on this database; the lock ends with the transaction.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('keyplane.migrate'))");
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = await tx.query<{ version: number; checksum: string }>(
      "SELECT version, checksum FROM schema_migrations ORDER BY version",
    );
    const known = new Map(applied.map((m) => [m.version, m.checksum]));
    for (const [version, checksum] of known) {
      const file = all.find((m) => m.version === version);
      if (!file) throw new Error(`database has migration ${version}, which this keyplane does not know: it is older than the database`);
      if (file.checksum !== checksum) throw new Error(`migration ${version}_${file.name} was changed after it was applied`);
    }
    const pending = all.filter((m) => !known.has(m.version));
    for (const m of pending) {
      await tx.exec(m.sql);
      await tx.query("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)", [m.version, m.name, m.checksum]);
      log.info({ migration: `${m.version}_${m.name}` }, "applied migration");
    }
    return pending.map((m) => m.version);
  });
}

/** True when every known migration is applied (readiness). */
export async function migrationsApplied(db: Database, migrations: readonly Migration[]): Promise<boolean> {
  const rows = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM schema_migrations");
  return rows[0]?.n === migrations.length;
}
