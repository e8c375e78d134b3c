import { describe, expect, it } from "vitest";
import { filledBuckets, rangeOf, type Range } from "./range.ts";
import { parseRetention } from "./retention.ts";
import { emptyBucket } from "./usage.ts";

const retention = parseRetention("48h,90d,730d");
const now = new Date("2026-11-28T17:42:10Z");
const at = (text: string) => new Date(text);

describe("rangeOf", () => {
  it.each([
    ["defaults to the 25 hours ending with the current one", {}, { interval: "hour", from: "2026-11-27T17:00:00Z", to: "2026-11-28T18:00:00Z" }],
    ["rounds from down and to up to the interval", { interval: "minute", from: at("2026-11-28T10:00:30Z"), to: at("2026-11-28T10:05:01Z") },
      { interval: "minute", from: "2026-11-28T10:00:00Z", to: "2026-11-28T10:06:00Z" }],
    ["keeps bounds already on the interval", { interval: "day", from: at("2026-11-01T00:00:00Z"), to: at("2026-11-28T00:00:00Z") },
      { interval: "day", from: "2026-11-01T00:00:00Z", to: "2026-11-28T00:00:00Z" }],
    ["ends a range with only from at the current interval's end", { interval: "day", from: at("2026-11-20T12:00:00Z") },
      { interval: "day", from: "2026-11-20T00:00:00Z", to: "2026-11-29T00:00:00Z" }],
    ["starts a range with only to 25 intervals before it", { interval: "minute", to: at("2026-11-28T10:00:00Z") },
      { interval: "minute", from: "2026-11-28T09:35:00Z", to: "2026-11-28T10:00:00Z" }],
    ["answers 2,000 buckets", { interval: "minute", from: at("2026-11-28T00:00:00Z"), to: at("2026-11-29T09:20:00Z") },
      { interval: "minute", from: "2026-11-28T00:00:00Z", to: "2026-11-29T09:20:00Z" }],
  ] as const)("%s", (_name, query, expected) => {
    const range = rangeOf(query, now, retention) as Range;
    expect({ interval: range.interval, from: range.from.toISOString(), to: range.to.toISOString() }).toEqual({
      interval: expected.interval, from: new Date(expected.from).toISOString(), to: new Date(expected.to).toISOString(),
    });
  });

  it.each([
    ["over 2,000 buckets", { interval: "minute", from: at("2026-11-28T00:00:00Z"), to: at("2026-11-29T09:21:00Z") }, /at most 2000 buckets/],
    ["from after to", { from: at("2026-11-28T10:00:00Z"), to: at("2026-11-28T09:00:00Z") }, /from must be before to/],
    ["from equal to to", { from: at("2026-11-28T10:00:00Z"), to: at("2026-11-28T10:00:00Z") }, /from must be before to/],
    ["minutes older than 48 hours", { interval: "minute", from: at("2026-11-26T17:00:00Z"), to: at("2026-11-26T18:00:00Z") }, /Minutes are kept for 2 days/],
    ["hours older than 90 days", { interval: "hour", from: at("2026-08-29T00:00:00Z"), to: at("2026-08-30T00:00:00Z") }, /Hours are kept for 90 days/],
  ] as const)("refuses %s", (_name, query, message) => {
    expect(rangeOf(query, now, retention)).toMatch(message);
  });

  it("takes minutes from exactly the oldest kept one", () => {
    expect(typeof rangeOf({ interval: "minute", from: at("2026-11-26T17:42:00Z"), to: at("2026-11-26T18:00:00Z") }, now, retention)).toBe("object");
  });
});

describe("filledBuckets", () => {
  it("answers every interval oldest first, zeros where nothing was counted", () => {
    const range: Range = { interval: "hour", from: at("2026-11-28T10:00:00Z"), to: at("2026-11-28T13:00:00Z") };
    const counted = { ...emptyBucket(at("2026-11-28T11:00:00Z")), valid: 5, credits: 7 };
    expect(filledBuckets(range, [counted])).toEqual([emptyBucket(at("2026-11-28T10:00:00Z")), counted, emptyBucket(at("2026-11-28T12:00:00Z"))]);
  });
});
