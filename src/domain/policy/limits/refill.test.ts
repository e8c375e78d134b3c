import { describe, expect, it } from "vitest";
import type { Refill } from "../policy.ts";
import { lastRefillAt, nextRefillAt } from "./refill.ts";

// From docs/api.md ("Key policy"): daily refills at 00:00 UTC; monthly at 00:00 UTC on `day` (default
// 1), or the month's last day when it is shorter. An instant exactly at a refill has had that refill.
const daily: Refill = { amount: 10, interval: "daily" };
const monthly = (day?: number): Refill => ({ amount: 10, interval: "monthly", ...(day === undefined ? {} : { day }) });

describe("refill instants", () => {
  it.each([
    // name, refill, now, last, next
    ["daily, in the afternoon", daily, "2024-03-15T13:45:00.000Z", "2024-03-15T00:00:00.000Z", "2024-03-16T00:00:00.000Z"],
    ["daily, exactly at midnight: that refill has happened", daily, "2024-03-15T00:00:00.000Z", "2024-03-15T00:00:00.000Z", "2024-03-16T00:00:00.000Z"],
    ["daily, 1 ms before midnight", daily, "2024-03-14T23:59:59.999Z", "2024-03-14T00:00:00.000Z", "2024-03-15T00:00:00.000Z"],
    ["daily, New Year's Eve", daily, "2024-12-31T18:00:00.000Z", "2024-12-31T00:00:00.000Z", "2025-01-01T00:00:00.000Z"],
    ["daily, 29 February", daily, "2024-02-29T08:00:00.000Z", "2024-02-29T00:00:00.000Z", "2024-03-01T00:00:00.000Z"],
    ["monthly, day 1 by default", monthly(), "2024-03-15T12:00:00.000Z", "2024-03-01T00:00:00.000Z", "2024-04-01T00:00:00.000Z"],
    ["monthly on the 15th, exactly at its midnight", monthly(15), "2024-03-15T00:00:00.000Z", "2024-03-15T00:00:00.000Z", "2024-04-15T00:00:00.000Z"],
    ["monthly on the 15th, 1 ms before it", monthly(15), "2024-03-14T23:59:59.999Z", "2024-02-15T00:00:00.000Z", "2024-03-15T00:00:00.000Z"],
    ["the 31st in April (30 days) is the 30th", monthly(31), "2024-04-20T00:00:00.000Z", "2024-03-31T00:00:00.000Z", "2024-04-30T00:00:00.000Z"],
    ["the 31st in April, on the 30th at midnight", monthly(31), "2024-04-30T00:00:00.000Z", "2024-04-30T00:00:00.000Z", "2024-05-31T00:00:00.000Z"],
    ["the 31st in a 31-day month, then a leap February", monthly(31), "2024-01-31T00:00:00.000Z", "2024-01-31T00:00:00.000Z", "2024-02-29T00:00:00.000Z"],
    ["the 31st in February of a leap year is the 29th", monthly(31), "2024-02-10T00:00:00.000Z", "2024-01-31T00:00:00.000Z", "2024-02-29T00:00:00.000Z"],
    ["the 31st in February of a common year is the 28th", monthly(31), "2023-02-10T00:00:00.000Z", "2023-01-31T00:00:00.000Z", "2023-02-28T00:00:00.000Z"],
    ["the 30th in a leap February, at its midnight", monthly(30), "2024-02-29T00:00:00.000Z", "2024-02-29T00:00:00.000Z", "2024-03-30T00:00:00.000Z"],
    ["the 30th in a common February, later that day", monthly(30), "2023-02-28T12:00:00.000Z", "2023-02-28T00:00:00.000Z", "2023-03-30T00:00:00.000Z"],
    ["the 29th after a common February", monthly(29), "2023-03-01T00:00:00.000Z", "2023-02-28T00:00:00.000Z", "2023-03-29T00:00:00.000Z"],
    ["the 29th in February 2100 (not a leap year)", monthly(29), "2100-02-15T00:00:00.000Z", "2100-01-29T00:00:00.000Z", "2100-02-28T00:00:00.000Z"],
    ["December to January, day 1", monthly(), "2024-12-15T00:00:00.000Z", "2024-12-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"],
    ["January back to December, day 31", monthly(31), "2025-01-10T00:00:00.000Z", "2024-12-31T00:00:00.000Z", "2025-01-31T00:00:00.000Z"],
    ["January back to December, day 5", monthly(5), "2025-01-03T00:00:00.000Z", "2024-12-05T00:00:00.000Z", "2025-01-05T00:00:00.000Z"],
    ["New Year's midnight, day 1", monthly(1), "2025-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z", "2025-02-01T00:00:00.000Z"],
  ])("%s", (_name, refill, now, last, next) => {
    expect(lastRefillAt(new Date(now), refill).toISOString()).toBe(last);
    expect(nextRefillAt(new Date(now), refill).toISOString()).toBe(next);
  });
});
