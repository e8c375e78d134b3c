import { PGlite, type Transaction } from "@electric-sql/pglite";
import type { Logger } from "pino";
import type { Database, Queryable, Row } from "./database.ts";
import { translated } from "./errors.ts";
import { logged } from "./sql-log.ts";

/**
 * Embedded PostgreSQL: the default when no DATABASE_URL is given. `dataDir` undefined keeps the
 * database in memory (tests). PGlite is one connection inside this process, so LISTEN/NOTIFY reaches
 * only this process, which is also the only one that can open the data directory.
 */
export async function openPglite(dataDir: string | undefined, log: Logger): Promise<Database> {
  const db = await PGlite.create(dataDir);

  const on = (target: PGlite | Transaction): Queryable => ({
    query: <R extends Row>(text: string, params?: readonly unknown[]) =>
      logged(log, text, async () => (await target.query<R>(text, params as unknown[] | undefined)).rows.map(normalizeRow)),
    async exec(script) {
      await target.exec(script);
    },
  });

  return {
    kind: "pglite",
    ...on(db),
    transaction: (work) => translated(() => db.transaction((tx) => work(on(tx)))),
    async listen(channels) {
      const unlistens = await Promise.all(Object.entries(channels).map(([channel, onMessage]) => db.listen(channel, onMessage)));
      return async () => {
        if (!db.closed) await Promise.all(unlistens.map((unlisten) => unlisten()));
      };
    },
    async close() {
      if (!db.closed) await db.close();
    },
  };
}

// PGlite answers bytea as Uint8Array where node-postgres gives a Buffer; the store expects Buffers.
function normalizeRow<R extends Row>(row: R): R {
  for (const key in row) {
    const value = row[key];
    if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
      (row as Row)[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    }
  }
  return row;
}
