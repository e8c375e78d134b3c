import { describe, expect, it } from "vitest";
import { matchesPathGlob, parsePathGlob } from "./glob-path.ts";

// From docs/api.md ("Key policy"): `paths` are platform paths where `*` matches one segment and `**`
// any number of segments; they are judged on the path as the upstream reads it (percent-decoded, dot
// segments removed). `reading` spells that reading for a plain path: its segments, a trailing slash
// an empty last one.
const reading = (path: string) => path.split("/").slice(1);

function matches(pattern: string, segments: readonly string[]): boolean {
  const parsed = parsePathGlob(pattern);
  if (!parsed.ok) throw new Error(`test input: ${pattern} does not parse`);
  return matchesPathGlob(parsed.value, segments);
}

describe("path patterns", () => {
  it.each([
    ["** matches zero segments", "/customers/acme/calls/**", "/customers/acme/calls", true],
    ["** matches zero segments before a trailing slash", "/customers/acme/calls/**", "/customers/acme/calls/", true],
    ["** matches several segments", "/customers/acme/calls/**", "/customers/acme/calls/1/legs/2", true],
    ["a segment is whole: no prefix match", "/customers/acme/calls/**", "/customers/acme/callsx", false],
    ["a pattern longer than the path", "/customers/acme/calls/**", "/customers/acme", false],
    ["a literal segment differs", "/customers/acme/calls/**", "/customers/globex/calls/1", false],
    ["* matches one segment", "/customers/*/calls/**", "/customers/acme/calls/1", true],
    ["* matches no more than one", "/customers/*/calls/**", "/customers/acme/x/calls/1", false],
    ["* matches no less than one", "/customers/*/calls/**", "/customers/calls", false],
    ["* at the end", "/customers/*", "/customers/acme", true],
    ["* at the end, with a trailing slash", "/customers/*", "/customers/acme/", true],
    ["* at the end, nothing for it", "/customers/*", "/customers", false],
    ["* at the end, only a slash for it", "/customers/*", "/customers/", false],
    ["* at the end, a segment too many", "/customers/*", "/customers/acme/keys", false],
    ["two stars, two segments", "/a/*/*", "/a/b/c", true],
    ["two stars, one segment", "/a/*/*", "/a/b", false],
    ["a pattern's trailing slash is the path without it", "/customers/acme/", "/customers/acme", true],
    ["the same path with a trailing slash", "/customers/acme", "/customers/acme/", true],
    ["/** matches the root", "/**", "/", true],
    ["/** matches any path", "/**", "/a/b/c", true],
    ["/ matches the root", "/", "/", true],
    ["/ matches the root only", "/", "/a", false],
    ["a leading ** matches zero segments", "/**/calls", "/calls", true],
    ["a leading ** matches several segments", "/**/calls", "/a/b/calls", true],
    ["a leading ** still needs the end", "/**/calls", "/a/calls/x", false],
    ["two ** with literals between, zero each", "/a/**/b/**/c", "/a/b/c", true],
    ["two ** with literals between, several each", "/a/**/b/**/c", "/a/x/b/y/z/c", true],
    ["two ** with literals between, out of order", "/a/**/b/**/c", "/a/c/b", false],
    ["two ** with literals between, a segment after the end", "/a/**/b/**/c", "/a/b/c/d", false],
    ["**/** is **", "/a/**/**", "/a", true],
    ["** then * needs a segment", "/a/**/*", "/a", false],
    ["** then * takes the last segment", "/a/**/*", "/a/b/c", true],
  ])("%s: %s against %s", (_name, pattern, path, expected) => expect(matches(pattern, reading(path))).toBe(expected));

  it.each([
    ["an encoded letter in the pattern is the letter", "/calls/%61bc", ["calls", "abc"], true],
    ["an encoded slash in the pattern is a character of its segment", "/files/a%2Fb", ["files", "a/b"], true],
    ["an encoded slash in the pattern does not split it", "/files/a%2Fb", ["files", "a", "b"], false],
    ["* takes a segment holding a decoded slash as one segment", "/files/*", ["files", "a/b"], true],
    ["an encoded star in the pattern is a literal star", "/files/%2A", ["files", "*"], true],
    ["an encoded star is no wildcard", "/files/%2A", ["files", "x"], false],
    ["a space, encoded in the pattern, decoded in the path", "/files/a%20b", ["files", "a b"], true],
  ])("%s: %s against %j", (_name, pattern, segments, expected) => expect(matches(pattern, segments)).toBe(expected));
});

describe("a pattern's scope keywords in canonical form", () => {
  const literals = (pattern: string) => {
    const parsed = parsePathGlob(pattern);
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.value.map((g) => (g.kind === "literal" ? g.text : g.kind === "one" ? "*" : "**"));
  };
  it.each([
    ["/tenants/acme/calls/**", ["customers", "acme", "calls", "**"]],
    ["/Customers/*/Domains/*/CALLS", ["customers", "*", "domains", "*", "CALLS"]],
    ["/DOMAINS/d1/Subscribers/*/x", ["domains", "d1", "subscribers", "*", "x"]],
    ["/customers/Tenants/x", ["customers", "Tenants", "x"]],
    ["/calls/Tenants/x", ["calls", "Tenants", "x"]],
    ["/*/acme/Domains/x", ["*", "acme", "Domains", "x"]],
    ["/**/Domains/x", ["**", "Domains", "x"]],
    ["/Domains", ["domains"]],
  ])("%s", (pattern, expected) => expect(literals(pattern)).toEqual(expected));
});

describe("malformed path patterns are refused with a reason", () => {
  it.each([
    ["empty", "", /start/],
    ["no leading slash", "customers/*", /start/],
    ["a star inside a segment", "/calls/abc*", /whole segments/],
    ["** inside a segment", "/calls/**x", /whole segments/],
    ["a query", "/calls?x=1", /query/],
    ["a fragment", "/calls#x", /query or fragment/],
    ["a malformed escape", "/calls/%zz", /percent-escape/],
    ["a .. segment", "/a/../b", /\.\. segments/],
    ["a . segment", "/a/./b", /\.\. segments/],
    ["an encoded .. segment", "/a/%2e%2e/b", /\.\. segments/],
  ])("%s: %j", (_name, pattern, reason) => {
    const parsed = parsePathGlob(pattern);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(reason);
  });
});
