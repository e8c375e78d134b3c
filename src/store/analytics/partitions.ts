import { INTERVALS, type Interval } from "../../domain/analytics/usage.ts";
import type { Queryable } from "../database.ts";
import { tableOf } from "./usage-writes.ts";

// The analytics tables' partitions (docs/analytics.md, "Storage"): minutes by the day, hours by the
// month, days by the year, each named by its start (usage_minutes_p20261128, usage_hours_p202611,
// usage_days_p2026). A partition is made as a table of its own and then attached, which locks the
// parent only against other attachments (SHARE UPDATE EXCLUSIVE): CREATE TABLE ... PARTITION OF would
// lock out every write and read for a moment. Removal detaches CONCURRENTLY, which waits for readers
// without making anyone wait, then drops the table that nothing reads any more.

/** One partition: its table's name and the range of bucket starts it holds. */
export interface UsagePartition {
  interval: Interval;
  name: string;
  from: Date;
  to: Date;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** The partition of `interval`'s table that holds a bucket starting at `ms`. */
export function partitionAt(interval: Interval, ms: number): UsagePartition {
  const d = new Date(ms);
  const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
  const table = tableOf(interval);
  if (interval === "minute") return { interval, name: `${table}_p${y}${pad(m + 1)}${pad(day)}`, from: new Date(Date.UTC(y, m, day)), to: new Date(Date.UTC(y, m, day + 1)) };
  if (interval === "hour") return { interval, name: `${table}_p${y}${pad(m + 1)}`, from: new Date(Date.UTC(y, m, 1)), to: new Date(Date.UTC(y, m + 1, 1)) };
  return { interval, name: `${table}_p${y}`, from: new Date(Date.UTC(y, 0, 1)), to: new Date(Date.UTC(y + 1, 0, 1)) };
}

/** The partitions of `interval`'s table from the one holding `fromMs` to the one holding `toMs`. */
export function partitionsBetween(interval: Interval, fromMs: number, toMs: number): UsagePartition[] {
  const parts: UsagePartition[] = [];
  for (let p = partitionAt(interval, fromMs); p.from.getTime() <= toMs; p = partitionAt(interval, p.to.getTime())) parts.push(p);
  return parts;
}

/** Makes the partition unless it exists; one process at a time, so that two never race to make it. */
export async function usagePartitionCreate(q: Queryable, p: UsagePartition): Promise<void> {
  const table = tableOf(p.interval);
  await q.query(`DO $$ BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('keyplane.usage_partitions'));
    IF to_regclass('${p.name}') IS NULL THEN
      CREATE TABLE ${p.name} (LIKE ${table} INCLUDING ALL);
      ALTER TABLE ${table} ATTACH PARTITION ${p.name} FOR VALUES FROM ('${p.from.toISOString()}') TO ('${p.to.toISOString()}');
    END IF;
  END $$`);
}

/** The analytics partitions that exist, attached or not (a removal cut short leaves one detached). */
export async function usagePartitionList(q: Queryable): Promise<{ partition: UsagePartition; attached: boolean; pending: boolean }[]> {
  const rows = await q.query<{ name: string; attached: boolean; pending: boolean }>(
    `SELECT c.relname AS name, i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS pending
       FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
      WHERE c.relkind = 'r' AND c.relname ~ '^usage_(minutes|hours|days)_p[0-9]+$' AND c.relnamespace = current_schema()::regnamespace`,
  );
  return rows.map((r) => ({ partition: partitionNamed(r.name), attached: r.attached, pending: r.pending }));
}

function partitionNamed(name: string): UsagePartition {
  const [, table, digits] = /^(usage_\w+)_p(\d+)$/.exec(name)!;
  const interval = INTERVALS.find((i) => tableOf(i) === table)!;
  const [y, m, d] = [Number(digits!.slice(0, 4)), Number(digits!.slice(4, 6) || 1), Number(digits!.slice(6, 8) || 1)];
  return partitionAt(interval, Date.UTC(y, m - 1, d));
}

/**
 * Removes a partition: detached CONCURRENTLY (never in a transaction: each statement on its own), which
 * finishes when the readers that began before it are done, or FINALIZEd when an earlier detach was cut
 * short; then dropped.
 */
export async function usagePartitionDrop(q: Queryable, p: { partition: UsagePartition; attached: boolean; pending: boolean }): Promise<void> {
  const table = tableOf(p.partition.interval);
  if (p.attached) await q.query(`ALTER TABLE ${table} DETACH PARTITION ${p.partition.name} ${p.pending ? "FINALIZE" : "CONCURRENTLY"}`);
  await q.query(`DROP TABLE IF EXISTS ${p.partition.name}`);
}
