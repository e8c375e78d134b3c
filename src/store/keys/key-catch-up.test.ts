import { describe, expect, it } from "vitest";
import { KeyLogCursor, type Catch, type KeyLogRead } from "./key-catch-up.ts";

// The cursor over the key event log, on reads made up here: each is a snapshot (its xmin and xmax),
// the largest event id it shows, and the ids it shows among those asked for (some of them keys'
// creations, which carry no change). What the database would answer for them is worked out from what
// the cursor asks, as keyLogRead's statement does.
interface MadeRead {
  xmin: number;
  xmax: number;
  last: number;
  events: number[];
  created: number[];
  imported?: boolean;
}
const read = (xmin: number, xmax: number, last: number, events: number[] = []): MadeRead => ({ xmin, xmax, last, events, created: [] });
const created = (r: MadeRead, ...ids: number[]): MadeRead => ({ ...r, created: ids });

function take(cursor: KeyLogCursor, r: MadeRead): Catch {
  const { after } = cursor.next();
  const shown = new Set(after === null ? [] : r.events);
  const holes: [number, number][] = [];
  for (let id = (after ?? r.last) + 1; id <= r.last; id++) {
    if (shown.has(id)) continue;
    const hole = holes.at(-1);
    if (hole && hole[1] === id - 1) hole[1] = id;
    else holes.push([id, id]);
  }
  const read: KeyLogRead = {
    xmin: BigInt(r.xmin), xmax: BigInt(r.xmax), last: r.last, holes, imported: r.imported ?? false,
    present: [...shown].filter((id) => after !== null && id <= after),
    changes: [...shown].filter((id) => !r.created.includes(id)).map((event) => ({ event, change: { id: event, hash: `h${event}`, managedBy: null } })),
  };
  return cursor.take(read);
}
const delivered = (c: Catch) => ("missed" in c ? "missed" : c.changes.map((change) => change.id));

/** A cursor started on a quiet log (nothing running) whose largest id is 10. */
function started(): KeyLogCursor {
  const cursor = new KeyLogCursor();
  expect(delivered(take(cursor, read(100, 100, 10)))).toEqual([]);
  return cursor;
}

describe("KeyLogCursor", () => {
  it("asks for nothing before its first read, then for what comes after the largest id it found", () => {
    const cursor = new KeyLogCursor();
    expect(cursor.next()).toMatchObject({ after: null, also: [] });
    take(cursor, read(100, 100, 10));
    expect(cursor.next()).toMatchObject({ after: 10, also: [] });
  });

  it("delivers each new event once", () => {
    const cursor = started();
    expect(delivered(take(cursor, read(101, 101, 12, [11, 12])))).toEqual([11, 12]);
    expect(cursor.next()).toMatchObject({ after: 12, also: [] });
    expect(delivered(take(cursor, read(102, 102, 12)))).toEqual([]);
  });

  it("counts a key's creation as read, but delivers nothing for it (it is not announced either)", () => {
    const cursor = started();
    expect(delivered(take(cursor, created(read(101, 101, 13, [11, 12, 13]), 12)))).toEqual([11, 13]);
    expect(cursor.next()).toMatchObject({ after: 13, also: [] });
  });

  it("an id taken earlier but committed later (a gap) is asked for again until it comes, then delivered", () => {
    const cursor = started();
    // 11's transaction (xid 101) still runs; 12's (xid 102) has committed.
    expect(delivered(take(cursor, read(101, 103, 12, [12])))).toEqual([12]);
    expect(cursor.next()).toMatchObject({ after: 12, also: [11] });
    expect(delivered(take(cursor, read(101, 103, 12)))).toEqual([]);
    expect(delivered(take(cursor, read(103, 103, 12, [11])))).toEqual([11]);
    expect(cursor.next().also).toEqual([]);
  });

  it("a gap that never comes (rolled back) is given up once every transaction that could hold it has ended", () => {
    const cursor = started();
    take(cursor, read(101, 103, 12, [12])); // 11 running as xid 101
    expect(cursor.next().also).toEqual([11]);
    // xid 101 ended without 11: the snapshot's xmin has passed the xmax of the read that found the gap.
    take(cursor, read(103, 104, 12));
    expect(cursor.next().also).toEqual([]);
  });

  it("keeps a gap while a transaction that may hold it still runs, however many reads pass", () => {
    const cursor = started();
    take(cursor, read(101, 103, 12, [12]));
    for (let xmax = 104; xmax < 110; xmax++) take(cursor, read(101, xmax, 12));
    expect(cursor.next().also).toEqual([11]);
    expect(delivered(take(cursor, read(110, 110, 12, [11])))).toEqual([11]);
  });

  it("however long a transaction holds the floor back, its gap is kept, and the floor moves once it ends", () => {
    const cursor = started();
    take(cursor, read(101, 103, 12, [12])); // 11 held by xid 101
    for (let i = 0; i < 5_000; i++) take(cursor, read(101, 103 + i, 12));
    expect(cursor.next().also).toEqual([11]);
    take(cursor, read(6_000, 6_000, 13, [13]));
    expect(cursor.next()).toMatchObject({ after: 13, also: [] });
  });

  it("after its connection is lost, catches up on the next: every event since, and the gaps", () => {
    const cursor = started();
    take(cursor, read(101, 103, 13, [12, 13])); // 11's transaction still runs
    cursor.lost();
    expect(cursor.next()).toMatchObject({ after: 13, also: [11] });
    expect(delivered(take(cursor, read(199, 201, 16, [11, 14, 16])))).toEqual([11, 14, 16]);
    expect(cursor.next()).toMatchObject({ after: 16, also: [15] });
  });

  it("forgets the bounds of a lost connection: another server's transaction ids say nothing of them", () => {
    const cursor = started();
    take(cursor, read(101, 103, 12, [12])); // gap 11; bound xmax 103
    cursor.lost();
    // On the new server xids are lower: 103 is not reached, yet this xmin may not free gap 11.
    take(cursor, read(103, 105, 12));
    expect(cursor.next().also).toEqual([11]);
  });

  it("started while transactions ran: a floor only once they have ended and one more read has passed", () => {
    const cursor = new KeyLogCursor();
    take(cursor, read(90, 95, 10)); // 90..94 may hold ids up to 10 that it cannot see
    take(cursor, read(95, 96, 11, [11])); // they have ended
    cursor.lost();
    // No floor yet: the new connection cannot be caught up from, everything is dropped.
    expect(cursor.next().after).toBeNull();
    expect(delivered(take(cursor, read(200, 200, 14)))).toBe("missed");
    expect(cursor.next()).toMatchObject({ after: 14, also: [] });
  });

  it("started while transactions ran: after that one more read, a lost connection is caught up from", () => {
    const cursor = new KeyLogCursor();
    take(cursor, read(90, 95, 10));
    take(cursor, read(95, 96, 11, [11]));
    take(cursor, read(96, 96, 11));
    cursor.lost();
    expect(delivered(take(cursor, read(200, 200, 12, [12])))).toEqual([12]);
  });

  it("a connection lost before any floor, started quiet: caught up from at once", () => {
    const cursor = started();
    cursor.lost();
    expect(delivered(take(cursor, read(100, 100, 11, [11])))).toEqual([11]);
  });

  it("too much missed to deliver one by one: says so, and starts again from there", () => {
    const cursor = started();
    const many = Array.from({ length: 10_001 }, (_, i) => 11 + i);
    expect(delivered(take(cursor, read(300, 300, 10_011, many)))).toBe("missed");
    expect(cursor.next()).toMatchObject({ after: 10_011, also: [] });
    expect(delivered(take(cursor, read(300, 300, 10_012, [10_012])))).toEqual([10_012]);
  });

  it("thousands of keys created between two reads drop nothing: creations are ids, not changes to deliver", () => {
    const cursor = started();
    const bulk = Array.from({ length: 50_000 }, (_, i) => 11 + i);
    expect(delivered(take(cursor, created(read(300, 300, 50_011, [...bulk, 50_011]), ...bulk)))).toEqual([50_011]);
    expect(cursor.next()).toMatchObject({ after: 50_011, also: [] });
  });

  it("more new ids than it would remember one by one: says so, however few are changes", () => {
    const cursor = started();
    expect(delivered(take(cursor, read(300, 300, 100_011)))).toBe("missed");
    expect(cursor.next()).toMatchObject({ after: 100_011, also: [] });
  });

  it("says when keys were imported, so that the tokens refused before are asked about again", () => {
    const cursor = started();
    expect(take(cursor, { ...created(read(101, 101, 12, [11, 12]), 11, 12), imported: true })).toEqual({ changes: [], imported: true });
    expect(take(cursor, read(102, 102, 13, [13]))).toMatchObject({ imported: false });
  });
});
