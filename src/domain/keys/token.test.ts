import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isTokenFormat, newToken, tokenHash, tokenHint } from "./token.ts";

describe("tokens", () => {
  it("are XI and 32 upper-case hex digits, and differ", () => {
    const tokens = new Set(Array.from({ length: 1000 }, newToken));
    expect(tokens.size).toBe(1000);
    for (const t of tokens) expect(t).toMatch(/^XI[0-9A-F]{32}$/);
  });

  it.each([
    ["XI" + "A".repeat(32), true],
    ["XI" + "a".repeat(32), false],
    ["xi" + "A".repeat(32), false],
    ["XI" + "A".repeat(31), false],
    ["XI" + "A".repeat(33), false],
    ["XI" + "G".repeat(32), false],
    ["XI" + "0123456789ABCDEF".repeat(2), true],
    ...["/", ":", "@", "`", "é", " "].map((c): [string, boolean] => ["XI" + "A".repeat(31) + c, false]),
    ["XI" + "A".repeat(15) + "F" + "0".repeat(15) + "9", true],
    ["XJ" + "A".repeat(32), false],
    ["", false],
  ])("format of %s is %s", (token, valid) => {
    expect(isTokenFormat(token)).toBe(valid);
  });

  it("are told apart as the keyId pattern tells them, whatever the characters", () => {
    // A valid token with one character replaced by one at or just past an edge of the allowed ranges.
    const valid = "XI0123456789ABCDEF0123456789ABCDEF";
    const near = fc.constantFrom(..."XIxi09AFGaf/:@`é \n".split(""));
    const candidate = fc.tuple(fc.nat(valid.length - 1), near).map(([at, c]) => valid.slice(0, at) + c + valid.slice(at + 1));
    fc.assert(fc.property(fc.oneof(candidate, fc.string({ maxLength: 40 })), (value) => isTokenFormat(value) === /^XI[0-9A-F]{32}$/.test(value)), { numRuns: 5_000 });
  });

  it("hash to 32 bytes, the same token to the same hash", () => {
    const t = newToken();
    expect(tokenHash(t)).toHaveLength(32);
    expect(tokenHash(t).equals(tokenHash(t))).toBe(true);
    expect(tokenHash(t).equals(tokenHash(newToken()))).toBe(false);
  });

  it("hint at the last four characters only", () => {
    expect(tokenHint("XI0123456789ABCDEF0123456789AB7798")).toBe("XI…7798");
  });
});
