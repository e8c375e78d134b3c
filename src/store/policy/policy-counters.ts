import type { Queryable } from "../database.ts";

// The counting of key policy (docs/adr/0013-policy-counting.md), in policy_windows and policy_balances
// (migrations/0005_key_policy.sql). Each process takes leases: units handed to it and to no other, in
// statements that can never hand out more than a window's limit or a balance holds. A grant is all the
// units asked for or none, so the caller always knows exactly what it got; when it gets none, the same
// statement says what was left (as of the statement's snapshot: at most that much, maybe less).

export interface Grant {
  /** Whether the units asked for were handed out (all of them); none were otherwise. */
  taken: boolean;
  /** What the counter had left after the statement; undefined when it could not say (a row made since its snapshot). */
  left: number | undefined;
}

const WINDOW_GRANT = `
  WITH taken AS (
    INSERT INTO policy_windows AS w (holder, name, window_start, granted) VALUES ($1, $2, $3, $4)
    ON CONFLICT (holder, name, window_start) DO UPDATE SET granted = w.granted + $4 WHERE w.granted + $4 <= $5
    RETURNING granted)
  SELECT granted, true AS taken FROM taken
  UNION ALL
  SELECT granted, false FROM policy_windows WHERE holder = $1 AND name = $2 AND window_start = $3 AND NOT EXISTS (SELECT 1 FROM taken)`;

/**
 * `want` units of a window (`windowStart` in seconds since the epoch), if `limit` leaves that many: the
 * row's lock serialises the grants of every process, so `granted` never passes the limit. The caller
 * asks for no more than the limit.
 */
export async function windowGrant(q: Queryable, holder: string, name: string, windowStart: number, want: number, limit: number): Promise<Grant> {
  const [row] = await q.query<{ granted: string; taken: boolean }>(WINDOW_GRANT, [holder, name, windowStart, want, limit]);
  if (!row) return { taken: false, left: undefined };
  return { taken: row.taken, left: Math.max(0, limit - Number(row.granted)) };
}

export interface BalanceGrant extends Grant {
  /** The balance's generation the units were taken under: they may go back only while it holds. */
  generation: number;
}

// A refill is applied by the grant that first comes after its instant ($3, worked out by the caller on
// its clock; null without a refill): the balance becomes `amount` ($4) and its generation moves, so that
// units taken in the last period never come back into this one.
const REFILLED = `(CASE WHEN b.refilled_at < $3 THEN $4 ELSE b.remaining END)`;
const BALANCE_GRANT = `
  WITH taken AS (
    UPDATE policy_balances b SET remaining = ${REFILLED} - $2,
      generation = CASE WHEN b.refilled_at < $3 THEN b.generation + 1 ELSE b.generation END,
      refilled_at = CASE WHEN b.refilled_at < $3 THEN $3 ELSE b.refilled_at END
    WHERE b.holder = $1 AND ${REFILLED} >= $2
    RETURNING b.remaining, b.generation)
  SELECT remaining, generation, true AS taken FROM taken
  UNION ALL
  SELECT ${REFILLED}, b.generation, false FROM policy_balances b WHERE b.holder = $1 AND NOT EXISTS (SELECT 1 FROM taken)`;

// A balance no one has set yet starts at the policy's `remaining`, refilled as of the last refill instant.
const BALANCE_SEED = `INSERT INTO policy_balances (holder, remaining, refilled_at) VALUES ($1, $2, $3) ON CONFLICT (holder) DO NOTHING`;

export interface Refilling {
  /** The last refill instant at or before now; null without a refill. */
  refillAt: Date | null;
  amount: number;
}

/** `want` units of a holder's balance, if it holds that many (refilled first when a refill is due). */
export async function balanceGrant(q: Queryable, holder: string, want: number, refilling: Refilling, initial: { remaining: number; at: Date }): Promise<BalanceGrant> {
  const params = [holder, want, refilling.refillAt, refilling.amount];
  let [row] = await q.query<{ remaining: string; generation: number; taken: boolean }>(BALANCE_GRANT, params);
  if (!row) {
    await q.query(BALANCE_SEED, [holder, initial.remaining, initial.at]);
    [row] = await q.query<{ remaining: string; generation: number; taken: boolean }>(BALANCE_GRANT, params);
    if (!row) return { taken: false, left: undefined, generation: -1 };
  }
  return { taken: row.taken, left: Math.max(0, Number(row.remaining)), generation: row.generation };
}

const BALANCE_RETURN = `
  UPDATE policy_balances b SET remaining = b.remaining + r.unused
    FROM unnest($1::text[], $2::bigint[], $3::integer[]) AS r(holder, unused, generation)
   WHERE b.holder = r.holder AND b.generation = r.generation`;

export interface Unused {
  holder: string;
  units: number;
  generation: number;
}

/** Units taken and not spent go back, in one statement; those of a generation since moved on are void. */
export async function balanceReturn(q: Queryable, unused: readonly Unused[]): Promise<void> {
  if (unused.length === 0) return;
  await q.query(BALANCE_RETURN, [unused.map((u) => u.holder), unused.map((u) => u.units), unused.map((u) => u.generation)]);
}

// A window is over once a later one of the same counter began: its row goes when that later one is a
// minute old (processes whose clocks lag may still count in the earlier one until then), and any row
// from before the longest window a limit may have (thirty days) goes too.
const WINDOWS_PRUNE = `
  DELETE FROM policy_windows w
   WHERE w.window_start < $1 - 2592000
      OR EXISTS (SELECT 1 FROM policy_windows n
                  WHERE n.holder = w.holder AND n.name = w.name AND n.window_start > w.window_start AND n.window_start <= $1 - 60)`;

/** Deletes the rows of windows that are over (`now` in seconds since the epoch); how many it deleted. */
export async function windowsPrune(q: Queryable, now: number): Promise<number> {
  const rows = await q.query<{ n: string }>(`WITH gone AS (${WINDOWS_PRUNE} RETURNING 1) SELECT count(*) AS n FROM gone`, [now]);
  return Number(rows[0]?.n ?? 0);
}

/** What the windows given (holder, name, window start in seconds) have handed out: none for a window no one asked of yet. */
export async function windowsGranted(q: Queryable, windows: ReadonlyArray<{ holder: string; name: string; windowStart: number }>): Promise<number[]> {
  if (windows.length === 0) return [];
  const rows = await q.query<{ i: number; granted: string | number | null }>(
    `SELECT u.i, w.granted
       FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS u(holder, name, window_start, i)
       LEFT JOIN policy_windows w USING (holder, name, window_start)`,
    [windows.map((w) => w.holder), windows.map((w) => w.name), windows.map((w) => w.windowStart)],
  );
  const granted = new Array<number>(windows.length).fill(0);
  for (const row of rows) granted[Number(row.i) - 1] = Number(row.granted ?? 0);
  return granted;
}
