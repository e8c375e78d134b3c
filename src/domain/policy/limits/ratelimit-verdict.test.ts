import { describe, expect, it } from "vitest";
import { judgeRateLimits, type LimitUse } from "./ratelimit-verdict.ts";

// From docs/api.md ("Key policy"): a request charged against several limits is charged against all of
// them or none; a cost of 0 is refused where a cost of 1 would be and charges nothing; every limit that
// counted the request is reported with what it has left and its reset; the RateLimit headers show the
// limit with the least remaining; Retry-After is the time until the window that refused it ends.
const NOW = Date.parse("2024-01-01T00:00:30Z"); // 30 s into a minute, 30 s into an hour
const calls = (used: number, limit = 100): LimitUse => ({ name: "calls", scope: "key", limit, windowSeconds: 60, used });
const hourly = (used: number): LimitUse => ({ name: "hourly", scope: "customer", limit: 1000, windowSeconds: 3600, used });
const burst = (used: number): LimitUse => ({ name: "burst", scope: "key", limit: 10, windowSeconds: 1, used });

describe("judgeRateLimits", () => {
  it.each([
    // name, limits, cost, admitted, [remaining, exceeded] per limit, the tightest's name, retryAfter
    ["room left: admitted and charged", [calls(40)], 1, true, [[59, false]], "calls", undefined],
    ["a cost that fills the window exactly", [calls(90)], 10, true, [[0, false]], "calls", undefined],
    ["a cost one above what is left: refused, nothing charged", [calls(90)], 11, false, [[10, true]], "calls", 30],
    ["a full window refuses a cost of 1", [calls(100)], 1, false, [[0, true]], "calls", 30],
    ["cost 0 with room: admitted, nothing charged", [calls(99)], 0, true, [[1, false]], "calls", undefined],
    ["cost 0 on a full window: refused as a cost of 1 would be", [calls(100)], 0, false, [[0, true]], "calls", 30],
    ["a limit lowered below what was spent has nothing left", [calls(15, 10)], 1, false, [[0, true]], "calls", 30],
    ["two levels, both with room: both charged", [hourly(999), burst(3)], 1, true, [[0, false], [6, false]], "hourly", undefined],
    ["two levels, one full: neither charged", [hourly(999), burst(3)], 2, false, [[1, true], [7, false]], "hourly", 3570],
    ["two levels, both full: the later window decides Retry-After", [hourly(1000), calls(100)], 1, false, [[0, true], [0, true]], "hourly", 3570],
    ["the key's limit is the tightest", [hourly(10), burst(8)], 1, true, [[989, false], [1, false]], "burst", undefined],
  ] satisfies [string, LimitUse[], number, boolean, [number, boolean][], string, number | undefined][])(
    "%s",
    (_name, uses, cost, admitted, reports, tightest, retryAfter) => {
      const verdict = judgeRateLimits(uses, cost, NOW);
      expect(verdict.admitted).toBe(admitted);
      expect(verdict.ratelimits.map((r) => [r.remaining, r.exceeded])).toEqual(reports);
      expect(verdict.tightest?.report.name).toBe(tightest);
      expect(verdict.retryAfter).toBe(retryAfter);
    },
  );

  it("reports each limit as docs/api.md shapes it, with the tightest's window for RateLimit-Policy", () => {
    const verdict = judgeRateLimits([hourly(10), burst(8)], 1, NOW);
    expect(verdict.ratelimits).toEqual([
      { name: "hourly", scope: "customer", limit: 1000, remaining: 989, reset: 3570, exceeded: false },
      { name: "burst", scope: "key", limit: 10, remaining: 1, reset: 1, exceeded: false },
    ]);
    expect(verdict.tightest).toEqual({ report: verdict.ratelimits[1], windowSeconds: 1 });
  });

  it("admits a request no limit counts, and reports nothing", () => {
    expect(judgeRateLimits([], 1, NOW)).toEqual({ admitted: true, ratelimits: [], tightest: undefined, retryAfter: undefined });
  });
});
