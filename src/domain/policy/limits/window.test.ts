import { describe, expect, it } from "vitest";
import { resetSeconds, windowEnd, windowStart } from "./window.ts";

// From docs/api.md ("Key policy"): a window starts at each multiple of windowSeconds since
// 1970-01-01T00:00:00Z; `reset` is the whole seconds until the window ends, at least 1.
const at = (iso: string) => Date.parse(iso);

describe("fixed windows", () => {
  it.each([
    // name, windowSeconds, now, start, end, reset
    ["the epoch starts a window", 60, 0, 0, 60_000, 60],
    ["exactly at a boundary: a new window, all of it left", 60, 120_000, 120_000, 180_000, 60],
    ["1 ms into a window: 59.999 s left, rounded up", 60, 120_001, 120_000, 180_000, 60],
    ["1.001 s before the end", 60, 178_999, 120_000, 180_000, 2],
    ["exactly 1 s before the end", 60, 179_000, 120_000, 180_000, 1],
    ["1 ms before the end: still at least 1", 60, 179_999, 120_000, 180_000, 1],
    ["a minute window at a wall-clock minute", 60, at("2024-01-01T00:00:30Z"), at("2024-01-01T00:00:00Z"), at("2024-01-01T00:01:00Z"), 30],
    ["a 1 s window at its start", 1, at("2023-11-14T22:13:20.000Z"), at("2023-11-14T22:13:20.000Z"), at("2023-11-14T22:13:21.000Z"), 1],
    ["a 1 s window halfway", 1, at("2023-11-14T22:13:20.500Z"), at("2023-11-14T22:13:20.000Z"), at("2023-11-14T22:13:21.000Z"), 1],
    ["a 1 s window 1 ms before its end", 1, at("2023-11-14T22:13:20.999Z"), at("2023-11-14T22:13:20.000Z"), at("2023-11-14T22:13:21.000Z"), 1],
    // 2,592,000,000 ms x 657 = 1,702,944,000,000 ms: 2023-12-19T00:00Z, the last boundary before 2024.
    ["a 30-day window, counted from the epoch, not from a month", 2_592_000, at("2024-01-01T00:00:00Z"), at("2023-12-19T00:00:00Z"), at("2024-01-18T00:00:00Z"), 17 * 86_400],
    ["a 30-day window at its boundary", 2_592_000, at("2023-12-19T00:00:00Z"), at("2023-12-19T00:00:00Z"), at("2024-01-18T00:00:00Z"), 2_592_000],
    ["an hour window not aligned to the minute", 3600, at("2024-01-01T10:59:59.001Z"), at("2024-01-01T10:00:00Z"), at("2024-01-01T11:00:00Z"), 1],
  ])("%s", (_name, windowSeconds, now, start, end, reset) => {
    expect(windowStart(now, windowSeconds)).toBe(start);
    expect(windowEnd(now, windowSeconds)).toBe(end);
    expect(resetSeconds(now, windowSeconds)).toBe(reset);
  });
});
