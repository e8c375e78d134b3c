import { describe, expect, it } from "vitest";
import { parseRetention } from "./retention.ts";

describe("parseRetention", () => {
  it("reads minutes, hours and days in that order", () => {
    expect(parseRetention("48h,90d,730d")).toEqual({ minute: 48 * 3_600_000, hour: 90 * 86_400_000, day: 730 * 86_400_000 });
  });

  it.each(["48h,90d", "48h,90d,730d,1d", "48,90d,730d", "0h,90d,730d", "48m,90d,730d", "-1h,90d,730d"])("refuses %s", (text) => {
    expect(() => parseRetention(text)).toThrow();
  });
});
