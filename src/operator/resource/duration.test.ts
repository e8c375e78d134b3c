import { describe, expect, it } from "vitest";
import { parseGoDuration } from "./duration.ts";

describe("parseGoDuration", () => {
  it.each([
    ["10s", 10_000],
    ["720h", 720 * 3_600_000],
    ["1h30m", 90 * 60_000],
    ["1.5s", 1_500],
    ["0s", 0],
    ["2m0.5s", 120_500],
  ])("reads %s", (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  it.each(["", "10", "1d", "-1s", "1h 30m", "s", ".5s", "1.s", "10ms"])("refuses %j", (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});
