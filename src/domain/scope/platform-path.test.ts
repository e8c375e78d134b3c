import { describe, expect, it } from "vitest";
import { pathReadings, pathTargets, platformTarget } from "./platform-path.ts";

describe("pathReadings: a path every upstream reads alike has one reading", () => {
  it.each([
    ["/customers/acme/keys", ["customers", "acme", "keys"]],
    ["/customers/%61cme/keys", ["customers", "acme", "keys"]],
    ["/customers/acme/../globex/keys", ["customers", "globex", "keys"]],
    ["/customers/acme/./keys", ["customers", "acme", "keys"]],
    ["/customers/acme/%2E%2E/globex", ["customers", "globex"]],
    ["/customers/acme/.%2e/globex", ["customers", "globex"]],
    ["/applications/ivr/.", ["applications", "ivr", ""]],
    ["/applications/ivr/x/..", ["applications", "ivr", ""]],
    ["/applications/ivr/", ["applications", "ivr", ""]],
    ["/domains/d1/a%20b/c%40d", ["domains", "d1", "a b", "c@d"]],
    ["/subscribers/%2B12125550100/calls", ["subscribers", "+12125550100", "calls"]],
    ["/domains/d1/caf%C3%A9", ["domains", "d1", "café"]],
    ["/domains/d1/100%25", ["domains", "d1", "100%"]],
    ["/domains/d1/50%25off", ["domains", "d1", "50%off"]],
    ["/keys?x=/..%2F..", ["keys"]],
    ["/", [""]],
  ])("%s -> %j", (path, segments) => expect(pathReadings(path)).toEqual([segments]));
});

// The two readings of an encoded slash or backslash (kept in its segment; a separator), and of empty
// segments (kept; merged before or after dot segments go).
describe("pathReadings: the readings of spellings upstreams differ on", () => {
  it.each([
    ["the reported climb", "/domains/d1/..%2Fd2/trunks", [["domains", "d1", "../d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["lower-case %2f", "/domains/d1/..%2fd2/trunks", [["domains", "d1", "../d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["%5C", "/domains/d1/..%5Cd2/trunks", [["domains", "d1", "..\\d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["lower-case %5c", "/domains/d1/..%5cd2/trunks", [["domains", "d1", "..\\d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["a literal backslash", "/domains/d1/..\\d2/trunks", [["domains", "d1", "..\\d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["an encoded dot-dot and slash", "/domains/d1/%2E%2E%2Fd2/trunks", [["domains", "d1", "../d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["a slash inside a name, no climb", "/customers/acme%2Fglobex/x", [["customers", "acme/globex", "x"], ["customers", "acme", "globex", "x"]]],
    ["an encoded slash before a plain dot-dot", "/domains/d2%2Fx/../trunks", [["domains", "trunks"], ["domains", "d2", "trunks"]]],
    ["self, then a climb", "/domains/self/..%2Fd2/x", [["domains", "self", "../d2", "x"], ["domains", "d2", "x"]]],
    ["a climb to self", "/domains/d2/..%2Fself/x", [["domains", "d2", "../self", "x"], ["domains", "self", "x"]]],
    ["a leading encoded slash", "/%2Fdomains/d2", [["/domains", "d2"], ["", "domains", "d2"], ["domains", "d2"]]],
    ["an empty segment", "/domains//d2/trunks", [["domains", "", "d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["a leading empty segment", "//domains/d2", [["", "domains", "d2"], ["domains", "d2"]]],
    ["an empty segment before dot-dot: merged before or after", "/domains/d2//../x", [["domains", "d2", "x"], ["domains", "x"]]],
    ["an encoded slash making an empty segment", "/domains/d1/..%2F%2Fd2/t", [["domains", "d1", "..//d2", "t"], ["domains", "", "d2", "t"], ["domains", "d2", "t"]]],
    ["a trailing double slash", "/applications/ivr//", [["applications", "ivr", "", ""], ["applications", "ivr", ""]]],
  ])("%s: %s", (_what, path, readings) => expect(pathReadings(path)).toEqual(readings));

  it.each([
    ["a plain climb", "/.."],
    ["a deeper plain climb", "/a/../.."],
    ["an encoded climb", "/%2e%2e/x"],
    ["a climb only as separators", "/a/..%2F..%2F.."],
    ["a climb only as backslashes", "/a/..\\..\\.."],
    ["a climb only once decoded twice", "/a/..%252F..%252F.."],
    ["a climb only once merged", "//../x"],
    // What an upstream that decodes twice reads is no reading keyplane takes: such a path is refused.
    ["a double-encoded slash", "/domains/d1/..%252Fd2/x"],
    ["a double-encoded lower-case slash", "/domains/d1/..%252fd2/x"],
    ["a double-encoded backslash", "/domains/d1/..%255Cd2/x"],
    ["double-encoded dots", "/domains/d1/%252E%252E/d2"],
    ["a double encoding by parts", "/domains/d1/..%25%32%46d2/x"],
    ["a double-encoded letter", "/%2564omains/d2"],
    ["a double-encoded letter beyond ASCII", "/domains/d1/caf%25C3%25A9"],
    ["a triple encoding", "/domains/d1/..%25252F..%25252Fd2"],
    ["a double encoding beside an encoded slash", "/domains/d1/..%2F%252E%252E"],
    ["a malformed escape", "/bad%zz"],
    ["a cut escape", "/bad%"],
    ["a malformed escape beside an encoded slash", "/a%2F%zz"],
    ["a relative path", "relative"],
    ["nothing", ""],
    ["a full URL", "http://x/y"],
  ])("refuses %s: %s", (_what, path) => expect(pathReadings(path)).toBeUndefined());
});

// The canonical form (scope keywords in any case, `tenants` as `customers`), and the readings of `;`
// parameters: kept in their segment, or removed from every segment before dot segments go.
describe("pathReadings: keywords in canonical form, parameters kept or removed", () => {
  it.each([
    ["tenants", "/tenants/acme/calls", [["customers", "acme", "calls"]]],
    ["a capital keyword", "/Domains/d2/trunks", [["domains", "d2", "trunks"]]],
    ["a keyword in capitals", "/DOMAINS/d2/trunks", [["domains", "d2", "trunks"]]],
    ["Tenants", "/Tenants/acme/Domains/d1/Applications/ivr", [["customers", "acme", "domains", "d1", "applications", "ivr"]]],
    ["a keyword read as one by Java and .NET (ı)", "/domaıns/d2/trunks", [["domains", "d2", "trunks"]]],
    ["a keyword read as one by Java and .NET (ſ)", "/ſubſcribers/1212/calls", [["subscribers", "1212", "calls"]]],
    ["a keyword read as one by Java (İ), encoded", "/DOMA%C4%B0NS/d2/trunks", [["domains", "d2", "trunks"]]],
    ["an encoded capital", "/%44omains/d2/trunks", [["domains", "d2", "trunks"]]],
    ["a keyword only where the grammar has one", "/customers/acme/Domains/d1/calls/Tenants/x", [["customers", "acme", "domains", "d1", "calls", "Tenants", "x"]]],
    ["identifiers are left as they are", "/customers/Tenants/domains/D1/x", [["customers", "Tenants", "domains", "D1", "x"]]],
    ["a keyword the grammar does not allow there", "/domains/d1/Customers/acme", [["domains", "d1", "Customers", "acme"]]],
    ["a path naming no scope", "/Calls/Tenants/x", [["Calls", "Tenants", "x"]]],
    ["a last keyword, without identifier", "/customers/acme/Domains", [["customers", "acme", "domains"]]],
    ["after a dot-dot", "/x/../Domains/d2", [["domains", "d2"]]],
    ["parameters on a keyword", "/domains;v=1/d2/trunks", [["domains;v=1", "d2", "trunks"], ["domains", "d2", "trunks"]]],
    ["parameters on an identifier", "/domains/d2;x/trunks", [["domains", "d2;x", "trunks"], ["domains", "d2", "trunks"]]],
    ["parameters and a capital", "/Domains;v=1/d2", [["Domains;v=1", "d2"], ["domains", "d2"]]],
    ["an empty parameter", "/domains;/d2", [["domains;", "d2"], ["domains", "d2"]]],
    ["an encoded parameter", "/domains%3Bv/d2", [["domains;v", "d2"], ["domains", "d2"]]],
    ["a dot-dot with a parameter climbs once removed", "/domains/d1/..;x/d2/t", [["domains", "d1", "..;x", "d2", "t"], ["domains", "d2", "t"]]],
    ["a segment of parameters only is empty once removed", "/domains/d1/;x/../../domains/d2", [["domains", "domains", "d2"], ["domains", "d2"]]],
    [
      "a parameter holding an encoded slash: removed before or after the separators are read",
      "/domains/d1;%2F..%2F..%2Fdomains%2Fd2/t",
      [["domains", "d1;/../../domains/d2", "t"], ["domains", "d2", "t"], ["domains", "d1", "t"]],
    ],
  ])("%s: %s", (_what, path, readings) => expect(pathReadings(path)).toEqual(readings));

  it("refuses a climb that only removing a parameter makes", () => expect(pathReadings("/a/..;/..;/x")).toBeUndefined());
});

describe("platformTarget", () => {
  const target = (path: string) => platformTarget(pathReadings(path)![0]!);
  it.each([
    ["/customers/acme/invoices", { customer: "acme" }, false],
    ["/tenants/acme/domains/sip.acme.example/calls", { customer: "acme", domain: "sip.acme.example" }, false],
    ["/customers/acme/domains/d/applications/ivr", { customer: "acme", domain: "d", application: "ivr" }, true],
    ["/customers/acme/domains/d/subscribers/1212/voicemail", { customer: "acme", domain: "d", subscriber: "1212" }, false],
    ["/domains/d/applications/ivr/", { domain: "d", application: "ivr" }, true],
    ["/applications/ivr", { application: "ivr" }, true],
    ["/applications/ivr/.", { application: "ivr" }, true],
    ["/applications/ivr/calls", { application: "ivr" }, false],
    ["/subscribers/self/calls", { subscriber: "self" }, false],
    ["/calls/today", {}, false],
    ["/customers", {}, false],
    ["/customers/acme/subscribers/1212", { customer: "acme" }, false],
    ["/domains/d/domains/e", { domain: "d" }, false],
  ])("%s names %j", (path, refs, atApplication) => expect(target(path)).toEqual({ refs, atApplication }));
});

describe("pathTargets: what each reading names, once", () => {
  it.each([
    ["/domains/d1/trunks", [{ refs: { domain: "d1" }, atApplication: false }]],
    ["/domains/d1/..%2Fd2/trunks", [{ refs: { domain: "d1" }, atApplication: false }, { refs: { domain: "d2" }, atApplication: false }]],
    // Both readings name d1: one target, one look-up.
    ["/domains/d1/a%2Fb", [{ refs: { domain: "d1" }, atApplication: false }]],
    ["/domains//d2/trunks", [{ refs: {}, atApplication: false }, { refs: { domain: "d2" }, atApplication: false }]],
    ["/applications/ivr//", [{ refs: { application: "ivr" }, atApplication: false }, { refs: { application: "ivr" }, atApplication: true }]],
    ["/Tenants/acme/DOMAINS/d1/x", [{ refs: { customer: "acme", domain: "d1" }, atApplication: false }]],
    // Kept, the parameter makes the first segment no keyword: that reading names no scope.
    ["/domains;v=1/d2/trunks", [{ refs: {}, atApplication: false }, { refs: { domain: "d2" }, atApplication: false }]],
    ["/d1;x/domains/d2", [{ refs: {}, atApplication: false }]],
  ])("%s", (path, targets) => expect(pathTargets(path)).toEqual(targets));

  // A segment that keeps a `;` names no entity: the reading that keeps it cannot be judged to reach anything.
  it.each([
    ["/domains/d2;x/trunks"],
    ["/domains/self;x/trunks"],
    ["/customers/acme/domains/d1;/x"],
    ["/applications/ivr%3Bv=1"],
    ["/Domains/d2;x"],
  ])("refuses %s: its identifier keeps a parameter under one reading", (path) => expect(pathTargets(path)).toBeUndefined());

  it("refuses what pathReadings refuses", () => expect(pathTargets("/a/..%2F..")).toBeUndefined());
});
