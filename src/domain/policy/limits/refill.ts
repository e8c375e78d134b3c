import type { Refill } from "../policy.ts";

// When credits refill (docs/api.md, "Key policy"), in UTC: daily at 00:00; monthly at 00:00 on `day`
// (default 1), or on the month's last day when it has fewer days (31 is April's 30th, February's 28th
// or 29th). An instant exactly at a refill time is after that refill: the refill has happened.

const DAY_MS = 86_400_000;

/** The most recent refill instant at or before `now`. */
export function lastRefillAt(now: Date, refill: Refill): Date {
  const ms = now.getTime();
  if (refill.interval === "daily") return new Date(Math.floor(ms / DAY_MS) * DAY_MS);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const inMonth = monthlyRefill(year, month, refill.day);
  return inMonth <= ms ? new Date(inMonth) : new Date(monthlyRefill(year, month - 1, refill.day));
}

/** The first refill instant after `now`. */
export function nextRefillAt(now: Date, refill: Refill): Date {
  const ms = now.getTime();
  if (refill.interval === "daily") return new Date(Math.floor(ms / DAY_MS) * DAY_MS + DAY_MS);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const inMonth = monthlyRefill(year, month, refill.day);
  return inMonth > ms ? new Date(inMonth) : new Date(monthlyRefill(year, month + 1, refill.day));
}

/** 00:00 UTC of the refill day in a month; Date.UTC carries a month of -1 or 12 into the next year over. */
function monthlyRefill(year: number, month: number, day = 1): number {
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, daysInMonth));
}
