import { INTERVALS, type Interval } from "./usage.ts";

// How long each grain is kept (KEYPLANE_ANALYTICS_RETENTION, docs/analytics.md): three durations with a
// unit of h or d, for minutes, hours and days, in that order.
export const DEFAULT_RETENTION = "48h,90d,730d";

export type Retention = Record<Interval, number>;

const UNIT_MS = { h: 3_600_000, d: 86_400_000 } as const;

/** Parses `48h,90d,730d` into milliseconds per grain; throws an Error saying what is wrong. */
export function parseRetention(text: string): Retention {
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length !== 3) throw new Error("three durations are needed, for minutes, hours and days (like 48h,90d,730d)");
  const ms = parts.map((p) => {
    const match = /^([1-9]\d{0,5})([hd])$/.exec(p);
    if (!match) throw new Error(`"${p}" is not a duration: a whole number of hours (h) or days (d)`);
    return Number(match[1]) * UNIT_MS[match[2] as "h" | "d"];
  });
  return Object.fromEntries(INTERVALS.map((interval, i) => [interval, ms[i]!])) as Retention;
}
