import { describe, expect, it } from "vitest";
import { DEFAULT_EXPIRY_NOTICES, parseExpiryNotices } from "./expiry-notices.ts";

describe("expiry notices", () => {
  it("are seven days and one day by default", () => {
    expect(parseExpiryNotices(DEFAULT_EXPIRY_NOTICES)).toEqual([604_800, 86_400]);
  });

  it("take seconds, minutes, hours and days, furthest first, each once", () => {
    expect(parseExpiryNotices("30s, 12h,90m,1d,12h")).toEqual([86_400, 43_200, 5_400, 30]);
    expect(parseExpiryNotices("")).toEqual([]);
  });

  it.each([["7"], ["7w"], ["1.5d"], ["-1d"], ["d"], ["0s"], ["3651d"], ["7 d"]])("refuse %j", (text) => {
    expect(() => parseExpiryNotices(text)).toThrow(/duration|from 1s/);
  });
});
