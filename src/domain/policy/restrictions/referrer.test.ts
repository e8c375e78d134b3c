import { describe, expect, it } from "vitest";
import { matchesReferrer, parseReferrerPattern, parseStoredReferrerPattern, readReferrer } from "./referrer.ts";

// From docs/api.md ("Key policy"): a referrer pattern is matched part by part: the scheme exactly; the
// host by labels, a `*` label standing for one or more whole labels; the port (the scheme's default
// when none is written); the path, where `*` matches any run of characters. The referrer's query and
// fragment take no part; one with user information, or that is no absolute http(s) URL, never matches.
function matches(pattern: string, referrer: string): boolean {
  const parsed = parseReferrerPattern(pattern);
  if (!parsed.ok) throw new Error(`test input: ${pattern} does not parse: ${parsed.reason}`);
  const read = readReferrer(referrer);
  return read !== undefined && matchesReferrer(parsed.value, read);
}

const PARTNER = "https://*.partner.example/*";

describe("referrer patterns: the reported spellings, and their neighbours", () => {
  it.each([
    // The host merely contains the text, in the path, the query, the fragment.
    ["the text in the path", PARTNER, "https://evil.example/.partner.example/", false],
    ["the text in the query", PARTNER, "https://evil.example/?.partner.example/x", false],
    ["the text in the fragment", PARTNER, "https://evil.example#.partner.example/", false],
    ["the text in the path, with a star's worth before it", PARTNER, "https://evil.example/a.partner.example/x", false],
    // What the pattern is for.
    ["one label", PARTNER, "https://a.partner.example/x", true],
    ["several labels", PARTNER, "https://a.b.partner.example/x", true],
    ["the root page", PARTNER, "https://a.partner.example/", true],
    ["no path written is the root", PARTNER, "https://a.partner.example", true],
    ["a query takes no part", PARTNER, "https://a.partner.example/x?y=1", true],
    ["a fragment takes no part", PARTNER, "https://a.partner.example/x#top", true],
    ["the host in capitals", PARTNER, "https://A.PARTNER.EXAMPLE/x", true],
    ["the scheme in capitals", PARTNER, "HTTPS://a.partner.example/x", true],
    ["the default port written", PARTNER, "https://a.partner.example:443/x", true],
    // Hosts that are not one or more labels before the domain.
    ["the domain itself", PARTNER, "https://partner.example/", false],
    ["a label that ends in the domain's first", PARTNER, "https://evilpartner.example/", false],
    ["the domain inside a longer host", PARTNER, "https://a.partner.example.evil.example/", false],
    ["an empty label before the domain", PARTNER, "https://.partner.example/", false],
    ["a trailing dot", PARTNER, "https://a.partner.example./", false],
    // User information, whatever it says.
    ["the domain as user information", PARTNER, "https://a.partner.example@evil.example/", false],
    ["user information before the right host", PARTNER, "https://x@a.partner.example/", false],
    ["a user and password", PARTNER, "https://x:y@a.partner.example/", false],
    ["an empty user information", PARTNER, "https://@a.partner.example/", false],
    ["a backslash ends the host, as in a browser", PARTNER, "https://a.partner.example\\@evil.example/", true],
    ["a backslash before a foreign host", PARTNER, "https://evil.example\\.partner.example/", false],
    // Ports and schemes.
    ["another port", PARTNER, "https://a.partner.example:8443/x", false],
    ["http for https", PARTNER, "http://a.partner.example/x", false],
    ["http's default port against https", PARTNER, "https://a.partner.example:80/x", false],
    ["a pattern's port", "https://*.partner.example:8443/*", "https://a.partner.example:8443/x", true],
    ["a pattern's port, none in the referrer", "https://*.partner.example:8443/*", "https://a.partner.example/x", false],
    ["a pattern's default port", "https://*.partner.example:443/*", "https://a.partner.example/x", true],
    ["http's default port", "http://*.partner.example/*", "http://a.partner.example:80/x", true],
    // No absolute http(s) URL.
    ["a relative reference", PARTNER, "/a.partner.example/", false],
    ["scheme-relative", PARTNER, "//a.partner.example/", false],
    ["another scheme", PARTNER, "ftp://a.partner.example/", false],
    ["javascript", PARTNER, "javascript://a.partner.example/%0aalert(1)", false],
    ["an app", PARTNER, "android-app://a.partner.example/", false],
    ["no slashes after the scheme", PARTNER, "https:a.partner.example/", false],
    ["words", PARTNER, "a.partner.example", false],
    ["empty", PARTNER, "", false],
    ["a space", PARTNER, "https://a.partner.example/ x", false],
    ["a line feed", PARTNER, "https://a.partner.exa\nmple/", false],
    ["a host that cannot be", PARTNER, "https://a.partner.example:99999/", false],
  ])("%s: %s against %s", (_name, pattern, referrer, expected) => expect(matches(pattern, referrer)).toBe(expected));
});

describe("referrer patterns: hosts and paths", () => {
  it.each([
    ["an exact host", "https://acme.example/*", "https://acme.example/x", true],
    ["an exact host, a subdomain", "https://acme.example/*", "https://a.acme.example/x", false],
    ["a star in the middle", "https://a.*.example/*", "https://a.b.c.example/", true],
    ["a star in the middle, nothing for it", "https://a.*.example/*", "https://a.example/", false],
    ["two stars, two labels at least", "https://*.*.example/", "https://a.example/", false],
    ["two stars", "https://*.*.example/", "https://a.b.example/", true],
    ["a lone star host", "https://*/*", "https://anything.example/x", true],
    ["a lone star host, no path written: the root", "https://*", "https://anything.example/x", false],
    ["a star host then a literal label", "https://*.example/", "https://example.example/", true],
    ["a star backtracks", "https://*.example.com/", "https://example.com.example.com/", true],
    ["an address", "http://192.0.2.1:8080/*", "http://192.0.2.1:8080/a", true],
    ["an IPv6 address", "http://[2001:db8::1]/*", "http://[2001:db8:0::1]/a", true],
    ["an international domain: the pattern in xn-- form, the referrer in Unicode", "https://*.xn--bcher-kva.example/*", "https://a.bücher.example/", true],
    ["a star runs over slashes in the path", "https://acme.example/*/end", "https://acme.example/a/b/c/end", true],
    ["no star: the exact path", "https://acme.example/", "https://acme.example/", true],
    ["no star: anchored at the end", "https://acme.example/", "https://acme.example/x", false],
    ["the path is case-sensitive", "https://acme.example/Docs/*", "https://acme.example/docs/x", false],
    ["the referrer's dot segments are gone", "https://acme.example/docs/*", "https://acme.example/docs/../admin", false],
    ["several stars, all matched in order", "https://*.acme.example/*/docs/*", "https://a.acme.example/v1/docs/intro", true],
    ["several stars, a literal part missing", "https://*.acme.example/*/docs/*", "https://a.acme.example/v1/intro", false],
    ["prefix and suffix may not share characters", "https://acme.example/ab*ba", "https://acme.example/aba", false],
    ["prefix and suffix side by side", "https://acme.example/ab*ba", "https://acme.example/abba", true],
    ["a middle part may not eat the suffix", "https://acme.example/*ab*b", "https://acme.example/ab", false],
    ["a dot is not any character", "https://acme.example/a.b", "https://acme.example/aXb", false],
    ["regex syntax is literal", "https://acme.example/(x)+$^|", "https://acme.example/(x)+$^|", true],
    ["regex syntax does not act", "https://acme.example/(x)+", "https://acme.example/xx", false],
    ["a lone star: any http(s) referrer", "*", "http://anything.example:81/x?y#z", true],
    ["a lone star: never user information", "*", "https://user@acme.example/", false],
    ["a lone star: never another scheme", "*", "android-app://com.acme", false],
  ])("%s: %s against %s", (_name, pattern, referrer, expected) => expect(matches(pattern, referrer)).toBe(expected));

  it("answers at once for a pattern of many stars against a long referrer (no backtracking regex)", () => {
    expect(matches(`https://acme.example/${"*a".repeat(12)}*c`, `https://acme.example/${"a".repeat(50_000)}`)).toBe(false);
    expect(matches(`https://${"*.".repeat(20)}x.example/`, `https://${"a.".repeat(120)}y.example/`)).toBe(false);
  });
});

describe("malformed referrer patterns are refused with a reason", () => {
  it.each([
    ["empty", "", /URL/],
    ["no scheme", "acme.example/*", /URL/],
    ["a star for the scheme", "*://acme.example/*", /URL/],
    ["another scheme", "ftp://acme.example/*", /URL/],
    ["a space", "https://acme.example/ x", /spaces/],
    ["a line break", "https://acme.example/\n", /control/],
    ["a star inside a label", "https://*acme.example/*", /whole labels/],
    ["a star ending a label", "https://acme*.example/*", /whole labels/],
    ["a star in a punycode label", "https://xn--*.example/*", /whole labels/],
    ["a star for the port", "https://acme.example:*/", /host or port/],
    ["user information", "https://user@*.acme.example/*", /user information/],
    ["user information as a star", "https://*@acme.example/*", /user information/],
    ["a query", "https://acme.example/*?x=1", /query or fragment/],
    ["a fragment", "https://acme.example/#*", /query or fragment/],
    ["no host", "https://:443/*", /host or port/],
  ])("%s: %j", (_name, pattern, reason) => {
    const parsed = parseReferrerPattern(pattern);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(reason);
  });

  it("takes a pattern stored under looser rules as one that matches nothing", () => {
    const parsed = parseStoredReferrerPattern("https://*acme.example/*");
    expect(parsed).toEqual({ ok: true, value: { kind: "none" } });
    expect(parsed.ok && matchesReferrer(parsed.value, readReferrer("https://evilacme.example/")!)).toBe(false);
    expect(parseStoredReferrerPattern(PARTNER)).toEqual(parseReferrerPattern(PARTNER));
  });
});
