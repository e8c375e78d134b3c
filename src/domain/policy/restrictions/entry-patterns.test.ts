import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCidr } from "./cidr.ts";
import { IP_ENTRY, PATH_ENTRY, REFERRER_ENTRY } from "./entry-patterns.ts";
import { parsePathGlob } from "./glob-path.ts";
import { parseReferrerPattern } from "./referrer.ts";

// Each pattern takes exactly what its parser takes: the named entries, then strings made of the
// characters that matter to each (fast-check), compared one by one.
interface Kind {
  kind: string;
  pattern: RegExp;
  parse: (text: string) => { ok: boolean };
  /** The characters strings are made of. */
  alphabet: string;
  named: [string, boolean][];
}

const KINDS: Kind[] = [
  { kind: "ips", pattern: IP_ENTRY, parse: parseCidr, alphabet: "0123456789abcdefABCDEF:./%", named: [
    ["203.0.113.0/24", true], ["2001:db8::/32", true], ["::", true], ["::/0", true], ["0.0.0.0/0", true], ["::ffff:192.0.2.1", true],
    ["1:2:3:4:5:6:7::", true], ["::1:2:3:4:5:6:7", true], ["1:2:3:4:5:6:1.2.3.4", true], ["fe80::1/128", true], ["10.0.0.1/32", true],
    ["999.0.0.1", false], ["10.0.0.0/33", false], ["01.2.3.4", false], ["10.0.0.0/08", false], ["fe80::1%eth0", false], ["1:2:3:4:5:6:7:8:9", false],
    ["1::2::3", false], ["::/129", false], ["10.0.0.1/", false], ["", false], ["1.2.3", false], ["::1.2.3.04", false], ["12345::", false],
  ] },
  { kind: "referrers", pattern: REFERRER_ENTRY, parse: parseReferrerPattern, alphabet: "hts:/*.aZ9-+ \t\u007f\u00a0\u2028\ufeff", named: [
    ["https://*.acme.example/*", true], ["*", true], ["http://a.example", true], ["HTTPS://A.example:8443/x*", true],
    ["https://203.0.113.9/", true], ["https://[2001:db8::1]:443/", true], ["https://xn--bcher-kva.example/", true],
    ["*.acme.example", false], ["ftp://x", false], ["acme.example", false], ["https://a b", false], ["", false], ["9ttp://x", false],
    ["https://x\ty", false], ["/path", false], ["https://a.9/", false], ["https://a:65536/", false], ["https://a.example/?q", false],
    ["https://u@a.example/", false], ["https://*a.example/", false], ["https:///a", false], ["https://bücher.example/", false],
  ] },
  { kind: "paths", pattern: PATH_ENTRY, parse: parsePathGlob, alphabet: "/*.%2eE?#aC3A9FfD8", named: [
    ["/customers/acme/calls/**", true], ["/customers/*/calls/**", true], ["/", true], ["//", true], ["/**", true], ["/a/", true],
    ["/%C3%A9", true], ["/%F0%9F%94%91", true], ["/...", true], ["/a%2Fb", true], ["/%00", true],
    ["customers", false], ["", false], ["/customers/a*", false], ["/***", false], ["/a?b", false], ["/a#b", false], ["/./a", false],
    ["/a/..", false], ["/%2e%2E/a", false], ["/.%2e", false], ["/%zz", false], ["/%C3", false], ["/%FF", false], ["/%ED%A0%80", false],
    ["/%C0%AF", false], ["/%E0%80%AF", false], ["/%F4%90%80%80", false], ["/a%", false],
  ] },
];

describe.each(KINDS)("the pattern of $kind", ({ pattern, parse, alphabet, named }) => {
  it.each(named)("%j: %s", (entry: string, valid: boolean) => {
    expect(pattern.test(entry), "the pattern").toBe(valid);
    expect(parse(entry).ok, "the parser").toBe(valid);
  });

  it("agrees with the parser on any string of the characters that matter", () => {
    const chars = [...alphabet];
    const text = fc.array(fc.constantFrom(...chars), { maxLength: 24 }).map((c) => c.join(""));
    // Named entries cut and spliced: near misses are where a pattern and a parser part.
    const spliced = fc.tuple(fc.constantFrom(...named.map(([e]) => e)), fc.nat(), fc.nat(), text).map(([e, at, cut, insert]) => {
      const from = at % (e.length + 1);
      return e.slice(0, from) + insert + e.slice(from + (cut % 4));
    });
    fc.assert(fc.property(fc.oneof(text, spliced), (entry) => pattern.test(entry) === parse(entry).ok), { numRuns: 20_000 });
  });
});
