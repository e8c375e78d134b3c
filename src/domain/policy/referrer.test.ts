import { describe, expect, it } from "vitest";
import { matchesReferrer, parseReferrerPattern } from "./referrer.ts";

// From docs/api.md ("Key policy"): `referrers` are URLs where `*` matches any run of characters; the
// whole referrer must match, and every other character stands for itself.
function matches(pattern: string, referrer: string): boolean {
  const parsed = parseReferrerPattern(pattern);
  if (!parsed.ok) throw new Error(`test input: ${pattern} does not parse`);
  return matchesReferrer(parsed.value, referrer);
}

describe("referrer patterns", () => {
  it.each([
    ["a subdomain and a page", "https://*.acme.example/*", "https://app.acme.example/page", true],
    ["an empty run at the end", "https://*.acme.example/*", "https://app.acme.example/", true],
    ["the dot before the domain is literal and required", "https://*.acme.example/*", "https://acme.example/page", false],
    ["the slash after the host is required", "https://*.acme.example/*", "https://app.acme.example", false],
    ["another scheme", "https://*.acme.example/*", "http://app.acme.example/", false],
    ["a star runs over slashes too", "https://acme.example/*/end", "https://acme.example/a/b/c/end", true],
    ["no star: the exact URL", "https://acme.example/", "https://acme.example/", true],
    ["no star: anchored at the end", "https://acme.example/", "https://acme.example/x", false],
    ["no star: anchored at the start", "https://acme.example/", "xhttps://acme.example/", false],
    ["a trailing star does not make a host a prefix", "https://acme.example/*", "https://acme.example.evil.example/", false],
    ["a leading star, anchored at the end", "*://acme.example/", "https://acme.example/?", false],
    ["several stars, all matched in order", "https://*.acme.example/*/docs/*", "https://a.acme.example/v1/docs/intro", true],
    ["several stars, a literal part missing", "https://*.acme.example/*/docs/*", "https://a.acme.example/v1/intro", false],
    ["several stars, parts out of order", "https://*/docs/*/v1", "https://x/v1/docs/y", false],
    ["two stars in a row are one", "https://**", "https://anything", true],
    ["a lone star matches any referrer", "*", "android-app://com.acme", true],
    ["prefix and suffix may not share characters", "https://ab*ba", "https://aba", false],
    ["prefix and suffix side by side", "https://ab*ba", "https://abba", true],
    ["a middle part may not eat the suffix", "https://*ab*b", "https://ab", false],
    ["a middle part right before the suffix", "https://*ab*b", "https://abb", true],
    ["a dot is not any character", "https://acme.example/a.b", "https://acme.example/aXb", false],
    [".* is a literal dot then a star", "https://acme.example/.*", "https://acme.example/anything", false],
    ["regex syntax is literal", "https://acme.example/(x)+?[a-z]{2}$^|\\", "https://acme.example/(x)+?[a-z]{2}$^|\\", true],
    ["regex syntax does not act", "https://acme.example/(x)+", "https://acme.example/xx", false],
    ["a class is not a class", "https://acme.example/[a-z]", "https://acme.example/q", false],
  ])("%s: %s against %s", (_name, pattern, referrer, expected) => expect(matches(pattern, referrer)).toBe(expected));

  it("answers at once for a pattern of many stars against a long referrer (no backtracking regex)", () => {
    expect(matches(`https://${"*a".repeat(12)}*c`, `https://${"a".repeat(50_000)}`)).toBe(false);
  });
});

describe("malformed referrer patterns are refused with a reason", () => {
  it.each([
    ["empty", "", /URL/],
    ["no scheme", "acme.example/*", /URL/],
    ["a space", "https://acme.example/ x", /spaces/],
    ["a line break", "https://acme.example/\n", /control/],
  ])("%s: %j", (_name, pattern, reason) => {
    const parsed = parseReferrerPattern(pattern);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(reason);
  });
});
