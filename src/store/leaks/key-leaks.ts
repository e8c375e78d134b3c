// leaks/ of store/: what a leak report records against a key. It may use domain/, store/'s top files
// and keys/.

import type { Author, LeakChanges } from "../../domain/keys/key-event.ts";
import type { Queryable } from "../database.ts";
import { recordEvents } from "../keys/key-events.ts";

// What a leak report reads and records (docs/leaks.md). The changes it makes to keys are the usual
// statements of keys.ts; the `leaked` event is written here, through recordEvents like every event.

/** What a report needs to know of a key behind a reported token, whatever became of the key. */
export interface LeakedKeyState {
  id: number;
  deletedAt: Date | null;
  expiresAt: Date | null;
}

/**
 * The keys, deleted and expired ones too, behind these token hashes (hex), by hash: a token that was a
 * keyplane key is a true positive even when the key is gone. One statement for a whole report.
 */
export async function keyStatesByHashes(q: Queryable, hashes: readonly string[]): Promise<Map<string, LeakedKeyState>> {
  if (hashes.length === 0) return new Map();
  const rows = await q.query(
    `SELECT encode(k.token_hash, 'hex') AS hash, k.id, k.deleted_at, k.expires_at FROM api_keys k
      WHERE k.token_hash IN (SELECT decode(h, 'hex') FROM unnest($1::text[]) AS h)`,
    [hashes],
  );
  return new Map(rows.map((row) => [
    row.hash as string,
    { id: row.id as number, deletedAt: (row.deleted_at ?? null) as Date | null, expiresAt: (row.expires_at ?? null) as Date | null },
  ]));
}

/** Whether a key was reported leaked before: a report of its token again changes nothing. Read under the key's lock. */
export async function keyLeakRecorded(tx: Queryable, id: number): Promise<boolean> {
  const rows = await tx.query("SELECT 1 FROM key_events WHERE key_id = $1 AND action = 'leaked' LIMIT 1", [id]);
  return rows.length > 0;
}

/** Records a key's `leaked` event, in the transaction that locked it (and acts on it). */
export async function keyRecordLeak(tx: Queryable, id: number, author: Author, changes: LeakChanges, now: Date): Promise<void> {
  await tx.query(
    recordEvents("(SELECT * FROM api_keys WHERE id = $1)", "leaked", { at: "$2::timestamptz", actor: "$3", changes: "$4", requestId: "$5" }),
    [id, now, JSON.stringify(author.actor), JSON.stringify(changes), author.requestId],
  );
}
