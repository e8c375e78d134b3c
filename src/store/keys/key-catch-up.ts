import type { CatchUp, Queryable } from "../database.ts";
import type { KeyChange } from "./key-change.ts";

// Announcements on keyplane_keys are a wake-up; the record is the key event log (key_events, written in
// the transaction of every change to a key). The listener reads the log on its own connection after
// each LISTEN and at each check, and every change it had not delivered yet is delivered as if
// announced. Why what is read cannot miss an event, although ids are taken at insert and a transaction
// that took a smaller id may commit later: docs/adr/0014-listener-catch-up.md.

/** More changes to deliver than this in one read: dropping what is cached costs less than delivering each. */
const MAX_CHANGES = 10_000;
/**
 * More ids between two reads than this: likewise, however few of them are changes (a read looks at
 * each, and the ids not seen would each be remembered). Keys created, which are not changes, count
 * here and not against MAX_CHANGES: a bulk provisioning of thousands drops nothing.
 */
const MAX_NEW_IDS = 100_000;
/**
 * Reads kept as candidates for the floor while a long transaction holds the snapshots' xmin back:
 * beyond, every other one goes (the floor then moves in larger steps, never past what holds).
 */
const MAX_BOUNDS = 1_000;

/** One read of the key event log: the snapshot it was read in, and what it shows of the events asked for. */
export interface KeyLogRead {
  /** The snapshot's xmin and xmax (xid8): transactions from xmin on may still be running, from xmax on had not started. */
  xmin: bigint;
  xmax: bigint;
  /** The largest event id the snapshot shows (0 for none). */
  last: number;
  /**
   * The changes among the events asked for, in id order, each as an announcement would give it: every
   * event but a key's creation and an export. A creation is not announced either (the trigger fires
   * on updates): nothing cached can be out of date for a key that did not exist.
   */
  changes: { event: number; change: KeyChange }[];
  /** The ids above `after`, up to `last`, that the snapshot does not show, as ranges [from, to]. */
  holes: [number, number][];
  /** Of the ids asked for again (`also`), those the snapshot shows. */
  present: number[];
  /**
   * Whether an imported key's creation is among the events asked for: its token was chosen elsewhere
   * and may have been refused here before it existed, which an import announces once a group
   * (keyInsertIds in keys.ts) and the log tells a listener that missed it.
   */
  imported: boolean;
}

/**
 * What the events with an id above `after` (and up to MAX_NEW_IDS more) or among `also` show, at
 * most `limit` changes, in one statement, so in one snapshot, with that snapshot's bounds. `after`
 * null: no events, only the snapshot and the largest id. A key's creation is read as an id and no
 * more, so that a read after thousands of them stays cheap.
 */
export async function keyLogRead(q: Queryable, after: number | null, also: readonly number[], limit: number): Promise<KeyLogRead> {
  const rows = await q.query<{
    xmin: string; xmax: string; last: string | null; holes: [number, number][]; present: number[]; imported: boolean;
    event: string | null; id: number; hash: string; managed_by: string | null;
  }>(
    `WITH asked AS (SELECT id, action, key_id, actor FROM key_events WHERE id > $1 AND id <= $4
                    UNION ALL SELECT id, action, key_id, actor FROM key_events WHERE id = ANY($2::bigint[]) AND id <= $1)
     SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax,
            (SELECT max(id) FROM key_events)::text AS last,
            (SELECT coalesce(json_agg(json_build_array(h.prev + 1, h.id - 1) ORDER BY h.id), '[]')
               FROM (SELECT id, lag(id, 1, $1) OVER (ORDER BY id) AS prev FROM key_events WHERE id > $1 AND id <= $4) h
              WHERE h.id > h.prev + 1) AS holes,
            (SELECT coalesce(json_agg(id), '[]') FROM asked WHERE id <= $1) AS present,
            EXISTS (SELECT 1 FROM asked WHERE action = 'created' AND actor->>'type' = 'import') AS imported,
            e.id::text AS event, k.id, encode(k.token_hash, 'hex') AS hash, k.managed_by
       FROM (SELECT 1) one
       LEFT JOIN LATERAL (SELECT id, key_id FROM asked WHERE action NOT IN ('created', 'exported') ORDER BY id LIMIT $3) e ON true
       -- Each change's key, one probe of the primary key each (LIMIT 1 keeps it so, whatever the
       -- statistics say of either table): the read is of the newest events, a few against many keys.
       LEFT JOIN LATERAL (SELECT k.id, k.token_hash, k.managed_by FROM api_keys k WHERE k.id = e.key_id LIMIT 1) k ON true
      ORDER BY e.id`,
    [after, also, limit, after === null ? null : after + MAX_NEW_IDS + 1],
  );
  const [first] = rows;
  if (!first) throw new Error("the key event log's read returned no row");
  return {
    xmin: BigInt(first.xmin),
    xmax: BigInt(first.xmax),
    last: Number(first.last ?? 0),
    changes: rows.filter((r) => r.event !== null).map((r) => ({ event: Number(r.event), change: { id: r.id, hash: r.hash, managedBy: r.managed_by } })),
    holes: first.holes,
    present: first.present,
    imported: first.imported,
  };
}

/** What one read comes to: the changes to deliver and whether keys were imported, or that the log cannot say what was missed. */
export type Catch = { changes: KeyChange[]; imported: boolean } | { missed: true };

interface Bound {
  xmax: bigint;
  last: number;
}

/**
 * Where this process stands in the key event log (docs/adr/0014-listener-catch-up.md):
 * - `#max`: every event up to it was delivered, known never to come, or is in `#gaps`;
 * - `#gaps`: ids up to `#max` not seen yet: taken by a transaction still running, or rolled back;
 * - `#floor`: every event not yet committed will have a larger id, so gaps at or below it never come;
 * - `#bounds`: this connection's reads, each its snapshot's xmax and the largest id it showed: once a
 *   later snapshot's xmin reaches that xmax, the largest id is a floor.
 * Until the first floor after a start, the events of transactions that were running at the start are
 * known only through their announcements; a connection lost before then cannot be caught up from.
 */
export class KeyLogCursor {
  #max: number | undefined;
  readonly #gaps = new Set<number>();
  #floor: number | undefined;
  #bounds: Bound[] = [];
  /** The first read's bound, while its floor waits for one more read (see the ADR); null once settled. */
  #start: (Bound & { reached: boolean }) | null = null;
  /** The connection was lost before there was a floor: the next read starts again, and says so. */
  #missedOnNext = false;

  /**
   * Whether a read is needed though nothing was announced: until there is a floor (the start, with
   * transactions running), reads move it; after, every change is announced while the connection
   * lasts, and a new connection reads first.
   */
  wanted(): boolean {
    return this.#max === undefined || this.#floor === undefined;
  }

  /** What the next read asks for: events above `after`, and the gaps. */
  next(): { after: number | null; also: number[]; limit: number } {
    return { after: this.#max ?? null, also: [...this.#gaps], limit: MAX_CHANGES + 1 };
  }

  /**
   * The connection read on is gone. Bounds compare only snapshots of one server, read on one
   * connection: they go. Without a floor, the next connection cannot be caught up from the log.
   */
  lost(): void {
    this.#bounds = [];
    if (this.#floor !== undefined) return;
    this.#max = undefined;
    this.#missedOnNext = true;
  }

  take(read: KeyLogRead): Catch {
    if (this.#max === undefined) {
      this.#restart(read);
      const missed = this.#missedOnNext;
      this.#missedOnNext = false;
      return missed ? { missed } : { changes: [], imported: false };
    }
    if (read.changes.length > MAX_CHANGES || read.last - this.#max > MAX_NEW_IDS) {
      this.#restart(read);
      return { missed: true };
    }
    const max = this.#max;
    const changes = read.changes.filter(({ event }) => event > max || this.#gaps.has(event)).map(({ change }) => change);
    for (const id of read.present) this.#gaps.delete(id);
    for (const [from, to] of read.holes) for (let id = from; id <= to; id++) this.#gaps.add(id);
    this.#max = Math.max(max, read.last);
    this.#advanceFloor(read);
    return { changes, imported: read.imported };
  }

  /** A start, or a start again after everything was dropped: from here on, not before. */
  #restart(read: KeyLogRead): void {
    this.#max = read.last;
    this.#gaps.clear();
    this.#bounds = [];
    // Nothing running in the snapshot: every event not in it comes after its largest id.
    const settled = read.xmin === read.xmax;
    this.#floor = settled ? read.last : undefined;
    this.#start = settled ? null : { xmax: read.xmax, last: read.last, reached: false };
  }

  #advanceFloor(read: KeyLogRead): void {
    if (this.#start) {
      if (this.#start.reached) {
        this.#floor = this.#start.last;
        this.#start = null;
      } else if (this.#start.xmax <= read.xmin) {
        this.#start.reached = true;
      }
    }
    this.#bounds.push({ xmax: read.xmax, last: read.last });
    if (this.#bounds.length > MAX_BOUNDS) this.#bounds = this.#bounds.filter((_, i, all) => i % 2 === 0 || i === all.length - 1);
    if (this.#start) return;
    let reached = -1;
    for (let i = 0; i < this.#bounds.length; i++) if (this.#bounds[i]!.xmax <= read.xmin) reached = i;
    if (reached >= 0) {
      this.#floor = Math.max(this.#floor ?? 0, this.#bounds[reached]!.last);
      this.#bounds = this.#bounds.slice(reached + 1);
    }
    const floor = this.#floor;
    if (floor !== undefined) for (const id of this.#gaps) if (id <= floor) this.#gaps.delete(id);
  }
}

/**
 * The keys channel's catch-up: each change the log shows that was not delivered yet goes to
 * `onChange`, keys imported meanwhile to `onImported`; when the log cannot say what was missed (a
 * connection lost too soon after the start, or too much missed), `onMissed`, as if every
 * announcement had been.
 */
export function keyCatchUp(onChange: (change: KeyChange) => void, onMissed: () => void, onImported: () => void = () => undefined, cursor = new KeyLogCursor()): CatchUp {
  return {
    async read(q) {
      const { after, also, limit } = cursor.next();
      const caught = cursor.take(await keyLogRead(q, after, also, limit));
      if ("missed" in caught) return onMissed();
      for (const change of caught.changes) onChange(change);
      if (caught.imported) onImported();
    },
    lost: () => cursor.lost(),
    wanted: () => cursor.wanted(),
  };
}
