import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { codePoints, isText } from "./text.ts";

describe("isText", () => {
  it.each([
    ["", true],
    ["billing", true],
    ["ключ 🔑", true],
    ["\uFFFE\uFFFF", true],
    ["\u{10FFFF}", true],
    ["a\u0000b", false],
    ["\uD800", false],
    ["\uDC00", false],
    ["a\uDBFFb", false],
    ["\uDC00\uD800", false],
  ])("%j: %s", (s, expected) => {
    expect(isText(s)).toBe(expected);
  });

  it("is what String.prototype.isWellFormed says, NUL aside", () => {
    // Whole code points and single UTF-16 code units mixed: pairs, and surrogates that stand alone.
    const unit = fc.oneof(fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)));
    fc.assert(
      fc.property(fc.string({ unit }), (s) => {
        expect(isText(s)).toBe((s as unknown as { isWellFormed(): boolean }).isWellFormed() && !s.includes("\u0000"));
      }),
    );
  });
});

describe("codePoints", () => {
  it.each([
    ["", 0],
    ["abc", 3],
    ["🔑🔑", 2],
    ["a\uD800b", 3],
    ["\uDC00\uD800", 2],
  ])("%j: %i", (s, n) => {
    expect(codePoints(s)).toBe(n);
  });
});
