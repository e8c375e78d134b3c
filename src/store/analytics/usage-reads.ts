import { OUTCOMES, type Bucket, type Interval, type Outcome } from "../../domain/analytics/usage.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Queryable, Row } from "../database.ts";
import { insideScope, withinLineage } from "../directory/scope-sql.ts";
import { COUNT_COLUMNS, tableOf } from "./usage-writes.ts";

// Reading usage analytics: one key's buckets (by its lineage), a scope's summed buckets, and its keys
// with the most requests. A scope's keys are found by the first key of each lineage, which holds the
// lineage's scope and stays in api_keys when deleted or expired: their traffic still counts.

/** The keys whose usage a scope read sums: inside `scope` (every key for null); with `within`, only that lineage and its descendants. */
export interface UsageWhere {
  scope: Scope | null;
  within?: number | undefined;
}

const summed = COUNT_COLUMNS.map((c) => `sum(u.${c})::bigint AS ${c}`).join(", ");
const REQUESTS = OUTCOMES.map((_, i) => `sum(u.${COUNT_COLUMNS[i]})`).join(" + ");

function countsOf(row: Row): Record<Outcome, number> & { credits: number } {
  const counts = {} as Record<Outcome, number> & { credits: number };
  OUTCOMES.forEach((o, i) => (counts[o] = Number(row[COUNT_COLUMNS[i]!])));
  counts.credits = Number(row.credits);
  return counts;
}

const bucketOf = (row: Row): Bucket => ({ start: row.start as Date, ...countsOf(row) });

/** One lineage's buckets in [from, to), oldest first; buckets with nothing counted are absent. */
export async function usageListByLineage(q: Queryable, interval: Interval, lineage: number, from: Date, to: Date): Promise<Bucket[]> {
  const rows = await q.query(
    `SELECT u.start, ${COUNT_COLUMNS.map((c) => `u.${c}`).join(", ")} FROM ${tableOf(interval)} u
      WHERE u.lineage = $1 AND u.start >= $2 AND u.start < $3 ORDER BY u.start`,
    [lineage, from, to],
  );
  return rows.map(bucketOf);
}

function keysWhere(where: UsageWhere, params: unknown[]): string {
  const parts = ["k.id = u.lineage"];
  if (where.scope) {
    const inside = insideScope(where.scope, params.length + 1, "k");
    parts.push(inside.sql);
    params.push(...inside.params);
  }
  if (where.within !== undefined) {
    params.push(where.within);
    parts.push(withinLineage(params.length));
  }
  return parts.join(" AND ");
}

/** The buckets in [from, to) summed over the keys of `where`, oldest first; empty buckets are absent. */
export async function usageListByScope(q: Queryable, interval: Interval, where: UsageWhere, from: Date, to: Date): Promise<Bucket[]> {
  const params: unknown[] = [from, to];
  const rows = await q.query(
    `SELECT u.start, ${summed} FROM ${tableOf(interval)} u JOIN api_keys k ON ${keysWhere(where, params)}
      WHERE u.start >= $1 AND u.start < $2 GROUP BY u.start ORDER BY u.start`,
    params,
  );
  return rows.map(bucketOf);
}

/** A key among a scope's most used: its newest key's id and name, and its sums over the range. */
export type TopKey = { id: number; name: string; requests: number; credits: number } & Record<Outcome, number>;

/** Up to `top` lineages of `where` with the most requests in [from, to), most first, each shown by its newest key. */
export async function usageTopByScope(q: Queryable, interval: Interval, where: UsageWhere, from: Date, to: Date, top: number): Promise<TopKey[]> {
  const params: unknown[] = [from, to, top];
  const rows = await q.query(
    `WITH s AS (
       SELECT u.lineage, ${REQUESTS} AS requests, ${summed} FROM ${tableOf(interval)} u JOIN api_keys k ON ${keysWhere(where, params)}
        WHERE u.start >= $1 AND u.start < $2 GROUP BY u.lineage ORDER BY requests DESC, u.lineage LIMIT $3
     )
     SELECT s.*, n.id, n.name FROM s
       CROSS JOIN LATERAL (SELECT k.id, k.name FROM api_keys k WHERE k.id = s.lineage OR k.lineage = s.lineage ORDER BY k.id DESC LIMIT 1) n
      ORDER BY s.requests DESC, s.lineage`,
    params,
  );
  return rows.map((row) => ({ id: row.id as number, name: row.name as string, requests: Number(row.requests), ...countsOf(row) }));
}
