// analytics/ of store/: usage analytics in the database (migrations/0009_usage_analytics.sql,
// docs/analytics.md): one statement writes a process's counts to the minutes, hours and days at once;
// partitions are made ahead and dropped whole (partitions.ts); reads sum buckets (usage-reads.ts). It
// may use domain/, store/'s top files (the connection) and directory/ (the SQL of "inside a scope").

import type { Interval } from "../../domain/analytics/usage.ts";
import type { Queryable } from "../database.ts";

/** What a process counted since its last write, column by column: one row per key-minute. */
export interface UsageBatch {
  lineages: number[];
  /** The minute of each row, in minutes since 1970-01-01T00:00:00Z. */
  minutes: number[];
  /** Per outcome (domain/analytics/usage.ts, OUTCOMES' order), then the credits: a column each. */
  counts: number[][];
}

/** The counts' columns, in OUTCOMES' order, then the credits. */
export const COUNT_COLUMNS = ["valid", "restricted", "rate_limited", "usage_exceeded", "forbidden", "disabled", "expired", "credits"] as const;

const TABLES: Record<Interval, string> = { minute: "usage_minutes", hour: "usage_hours", day: "usage_days" };
export const tableOf = (interval: Interval) => TABLES[interval];

const sums = COUNT_COLUMNS.map((c) => `sum(${c})::bigint`).join(", ");
const adds = COUNT_COLUMNS.map((c) => `${c} = u.${c} + excluded.${c}`).join(", ");
const upsert = (interval: Interval, start: string, cutoff: string) =>
  `INSERT INTO ${TABLES[interval]} AS u (lineage, start, ${COUNT_COLUMNS.join(", ")})
     SELECT lineage, ${start}, ${sums} FROM t WHERE ${start} >= to_timestamp(${cutoff}) GROUP BY 1, 2
   ON CONFLICT (lineage, start) DO UPDATE SET ${adds}`;

// Summed in the statement, so that counts from every process add up exactly, and a row given twice
// (a batch given back after a failed write) is one row of the upsert.
const USAGE_RECORD = `WITH t AS (
    SELECT t.lineage, to_timestamp(t.minute * 60) AS minute, ${COUNT_COLUMNS.map((c) => `t.${c}`).join(", ")}
      FROM unnest($1::integer[], $2::bigint[], ${COUNT_COLUMNS.map((_, i) => `$${i + 3}::bigint[]`).join(", ")})
        AS t(lineage, minute, ${COUNT_COLUMNS.join(", ")})
  ),
  minutes AS (${upsert("minute", "minute", "$11")}),
  hours AS (${upsert("hour", "date_trunc('hour', minute, 'UTC')", "$12")})
  ${upsert("day", "date_trunc('day', minute, 'UTC')", "$13")}`;

/**
 * Adds a batch to the minutes, hours and days, in one statement whatever its size. Buckets that start
 * before their grain's `cutoffs` (seconds since 1970: now less its retention) are left out: their
 * partitions may be gone.
 */
export async function usageRecord(q: Queryable, batch: UsageBatch, cutoffs: Record<Interval, number>): Promise<void> {
  await q.query(USAGE_RECORD, [batch.lineages, batch.minutes, ...batch.counts, cutoffs.minute, cutoffs.hour, cutoffs.day]);
}
