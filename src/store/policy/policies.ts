// policy/ of store/: key and entity policies, balances, and the counters of rate-limit windows and
// credits. It may use domain/ and store/'s top files.

import type { Policy } from "../../domain/policy/policy.ts";
import type { Queryable, Row } from "../database.ts";

// Policies' balances (migrations/0005_key_policy.sql, docs/adr/0013-policy-counting.md): one row per
// holder whose policy has credits, holding what no process holds in a lease. Every change to a
// balance is announced on CREDITS_CHANNEL with the holder, so every process drops its leases of it.

/** The channel on which a balance's change is announced; the payload is the holder ('key:17', 'customer:3'). */
export const CREDITS_CHANNEL = "keyplane_credits";

/** Who holds a policy: 'key:17', 'customer:3', 'domain:5', 'application:8', 'subscriber:9'. */
export const policyHolder = (level: "key" | "customer" | "domain" | "application" | "subscriber", id: number) => `${level}:${id}`;

export interface Balance {
  remaining: number;
  refilledAt: Date;
  generation: number;
}

/** A refill that may be due: when the last one was, and what it sets the balance to. */
export interface DueRefill {
  at: Date;
  amount: number;
}

const balanceFrom = (row: Row): Balance => ({
  // bigint: node-postgres gives text, PGlite a number or a BigInt; balances stay below 2^53.
  remaining: Number(row.remaining),
  refilledAt: row.refilled_at as Date,
  generation: Number(row.generation),
});

const announce = (q: Queryable, holder: string) => q.query(`SELECT pg_notify('${CREDITS_CHANNEL}', $1)`, [holder]);

/** The balances of these holders that exist. */
export async function balanceList(q: Queryable, holders: readonly string[]): Promise<Map<string, Balance>> {
  if (holders.length === 0) return new Map();
  const rows = await q.query("SELECT holder, remaining, refilled_at, generation FROM policy_balances WHERE holder = ANY($1::text[])", [holders]);
  return new Map(rows.map((row) => [row.holder as string, balanceFrom(row)]));
}

/** Locks a holder's balance for the rest of the transaction, and reads it. */
export async function balanceLock(tx: Queryable, holder: string): Promise<Balance | undefined> {
  const rows = await tx.query("SELECT remaining, refilled_at, generation FROM policy_balances WHERE holder = $1 FOR UPDATE", [holder]);
  return rows[0] ? balanceFrom(rows[0]) : undefined;
}

/**
 * Sets a holder's balance: `remaining`, refilled now. The generation moves on, so units that processes
 * took under the old one are void and never come back into the new balance.
 */
export async function balanceSet(q: Queryable, holder: string, remaining: number, now: Date): Promise<Balance> {
  const rows = await q.query(
    `INSERT INTO policy_balances (holder, remaining, refilled_at, generation) VALUES ($1, $2, $3, 1)
     ON CONFLICT (holder) DO UPDATE SET remaining = EXCLUDED.remaining, refilled_at = EXCLUDED.refilled_at,
                                        generation = policy_balances.generation + 1
     RETURNING remaining, refilled_at, generation`,
    [holder, remaining, now],
  );
  await announce(q, holder);
  return balanceFrom(rows[0]!);
}

/**
 * Adds `add` (negative to take) to a holder's balance in one statement, the balance kept within 0 and
 * `max`. A refill that is due is applied first, as a grant would apply it (its generation moves on);
 * otherwise the generation stays, so units that processes hold remain theirs. A holder without a row
 * starts from `start`.
 */
export async function balanceAdd(q: Queryable, holder: string, add: number, start: number, refill: DueRefill | null, max: number, now: Date): Promise<Balance> {
  const rows = await q.query(
    `INSERT INTO policy_balances AS b (holder, remaining, refilled_at, generation)
       VALUES ($1, least($5::bigint, greatest(0, $3::bigint + $2::bigint)), $6, 1)
     ON CONFLICT (holder) DO UPDATE SET
       remaining = least($5::bigint, greatest(0,
         CASE WHEN b.refilled_at < $4::timestamptz THEN $7::bigint ELSE b.remaining END + $2::bigint)),
       refilled_at = CASE WHEN b.refilled_at < $4::timestamptz THEN $6 ELSE b.refilled_at END,
       generation = b.generation + CASE WHEN b.refilled_at < $4::timestamptz THEN 1 ELSE 0 END
     RETURNING remaining, refilled_at, generation`,
    [holder, add, start, refill?.at ?? null, max, now, refill?.amount ?? 0],
  );
  await announce(q, holder);
  return balanceFrom(rows[0]!);
}

/** Removes a holder's balance (its policy no longer has credits); announced when there was one. */
export async function balanceDelete(q: Queryable, holder: string): Promise<void> {
  const rows = await q.query("DELETE FROM policy_balances WHERE holder = $1 RETURNING holder", [holder]);
  if (rows.length > 0) await announce(q, holder);
}

/** A policy as a jsonb parameter. */
export const policyParam = (policy: Policy | null): string | null => (policy === null ? null : JSON.stringify(policy));

/**
 * A policy with its fields in the documented order (jsonb keeps an object's keys in an order of its
 * own), and without fields left undefined: what every answer shows, and what changes compare.
 */
export function orderedPolicy(p: Policy): Policy {
  const ordered: Record<string, unknown> = {};
  const put = (into: Record<string, unknown>, field: string, value: unknown) => {
    if (value !== undefined) into[field] = value;
  };
  if (p.restrictions) {
    const { ips, referrers, methods, paths } = p.restrictions;
    const r: Record<string, unknown> = {};
    [["ips", ips], ["referrers", referrers], ["methods", methods], ["paths", paths]].forEach(([f, v]) => put(r, f as string, v));
    ordered.restrictions = r;
  }
  if (p.ratelimits) {
    ordered.ratelimits = p.ratelimits.map(({ name, limit, windowSeconds, methods, paths }) => {
      const l: Record<string, unknown> = { name, limit, windowSeconds };
      put(l, "methods", methods);
      put(l, "paths", paths);
      return l;
    });
  }
  if (p.credits) {
    const { remaining, refill } = p.credits;
    const c: Record<string, unknown> = { remaining };
    if (refill) {
      const r: Record<string, unknown> = { amount: refill.amount, interval: refill.interval };
      put(r, "day", refill.day);
      c.refill = r;
    }
    ordered.credits = c;
  }
  put(ordered, "leakPolicy", p.leakPolicy);
  return ordered as Policy;
}

/** A policy column as read: null, or the policy in order. */
export const policyFromColumn = (value: unknown): Policy | null => (value == null ? null : orderedPolicy(value as Policy));
