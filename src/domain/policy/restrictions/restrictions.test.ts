import { describe, expect, it } from "vitest";
import { pathReadings } from "../../scope/platform-path.ts";
import type { Restrictions } from "../policy.ts";
import { requestFacts, type RequestInput } from "./request-facts.ts";
import { compileRestrictions, restrictionRefusal } from "./restrictions.ts";

// From docs/api.md ("Key policy"): a request passes when it matches every kind given, and within a kind
// one entry; the reason is the first kind refused in the order ip, referrer, method, path; a
// restriction whose input is missing refuses. A path is judged in each reading an upstream may take.
const ALL: Restrictions = {
  ips: ["203.0.113.0/24", "2001:db8::/32"],
  referrers: ["https://*.acme.example/*", "https://acme.example/"],
  methods: ["GET", "POST"],
  paths: ["/customers/acme/calls/**", "/customers/acme/voicemail"],
};
const calls = ["customers", "acme", "calls", "1"];
const voicemail = ["customers", "acme", "voicemail"];
const GOOD: RequestInput = { ip: "203.0.113.9", referrer: "https://app.acme.example/x", method: "GET", paths: [calls] };

function refusal(restrictions: Restrictions, input: RequestInput) {
  const compiled = compileRestrictions(restrictions);
  if (!compiled.ok) throw new Error(`test input: ${compiled.reason}`);
  return restrictionRefusal(compiled.value, requestFacts(input));
}

describe("restrictionRefusal", () => {
  it.each([
    ["a request matching every kind", ALL, GOOD, undefined],
    ["an IPv6 client inside the second entry", ALL, { ...GOOD, ip: "2001:db8::5" }, undefined],
    ["a mapped IPv4 client inside", ALL, { ...GOOD, ip: "::ffff:203.0.113.9" }, undefined],
    ["a client outside every entry", ALL, { ...GOOD, ip: "198.51.100.1" }, "ip"],
    ["no client address", ALL, { ...GOOD, ip: undefined }, "ip"],
    ["a client address that is none", ALL, { ...GOOD, ip: "not-an-ip" }, "ip"],
    ["the second referrer entry", ALL, { ...GOOD, referrer: "https://acme.example/" }, undefined],
    ["a referrer outside every entry", ALL, { ...GOOD, referrer: "https://evil.example/" }, "referrer"],
    ["no referrer", ALL, { ...GOOD, referrer: undefined }, "referrer"],
    ["an empty referrer", ALL, { ...GOOD, referrer: "" }, "referrer"],
    ["POST, the second method", ALL, { ...GOOD, method: "POST" }, undefined],
    ["a method not listed", ALL, { ...GOOD, method: "DELETE" }, "method"],
    ["methods are compared exactly", ALL, { ...GOOD, method: "get" }, "method"],
    ["no method", ALL, { ...GOOD, method: undefined }, "method"],
    ["the second path entry", ALL, { ...GOOD, paths: [voicemail] }, undefined],
    ["a path outside every entry", ALL, { ...GOOD, paths: [["customers", "acme", "keys"]] }, "path"],
    ["no path", ALL, { ...GOOD, paths: undefined }, "path"],
    ["a path with no reading (it cannot be judged)", ALL, { ...GOOD, paths: [] }, "path"],
    ["a path whose readings all pass, by different entries", ALL, { ...GOOD, paths: [calls, voicemail] }, undefined],
    ["a path one of whose readings is outside", ALL, { ...GOOD, paths: [calls, ["customers", "globex", "calls"]] }, "path"],
    ["ip is judged before path", ALL, { ...GOOD, ip: "198.51.100.1", paths: [["x"]] }, "ip"],
    ["ip is judged before referrer", ALL, { ...GOOD, ip: undefined, referrer: undefined }, "ip"],
    ["referrer is judged before method", ALL, { ...GOOD, referrer: "https://evil.example/", method: "PUT" }, "referrer"],
    ["method is judged before path", ALL, { ...GOOD, method: "PUT", paths: undefined }, "method"],
    ["a kind not given does not apply", { methods: ["GET"] }, { method: "GET" }, undefined],
    ["a kind not given does not apply, the given one refuses", { methods: ["GET"] }, { method: "PUT", ip: "203.0.113.9" }, "method"],
    ["no restrictions at all", {}, {}, undefined],
  ] satisfies [string, Restrictions, RequestInput, string | undefined][])("%s", (_name, restrictions, input, expected) => {
    expect(refusal(restrictions, input)).toBe(expected);
  });
});

// A restriction passes a path only under every reading of it (docs/api.md, "Verification"): the
// canonical form reads the scope keywords in any case, and nothing else; a kept `;` parameter is part
// of its segment.
describe("restrictionRefusal on every spelling of a path", () => {
  const CALLS: Restrictions = { paths: ["/customers/acme/calls/**"] };
  it.each([
    ["the plain path", CALLS, "/customers/acme/calls/1", undefined],
    ["tenants", CALLS, "/tenants/acme/calls/1", undefined],
    ["a capital keyword", CALLS, "/Customers/acme/calls/1", undefined],
    ["a keyword in capitals", CALLS, "/TENANTS/acme/calls/1", undefined],
    ["a pattern's keyword in any case", { paths: ["/Tenants/acme/calls/**"] }, "/customers/acme/calls/1", undefined],
    ["a capital resource is another resource", CALLS, "/customers/acme/Calls/1", "path"],
    ["an identifier in another case is another text", CALLS, "/customers/ACME/calls/1", "path"],
    ["a parameter on the keyword", CALLS, "/customers;a=b/acme/calls/1", "path"],
    ["a parameter on the identifier", CALLS, "/customers/acme;a=b/calls/1", "path"],
    ["a parameter on the resource", CALLS, "/customers/acme/calls;a=b/1", "path"],
    ["a parameter below the pattern's **", CALLS, "/customers/acme/calls/1;a=b", undefined],
    ["a dot-dot parameter climbing out", CALLS, "/customers/acme/calls/..;/keys", "path"],
    ["an encoded parameter climbing out", CALLS, "/customers/acme/calls/..%3B/keys", "path"],
    ["a parameter that stars allow", { paths: ["/*/*/calls/**"] }, "/customers;a=b/acme;c/calls/1", undefined],
  ] satisfies [string, Restrictions, string, string | undefined][])("%s: %s", (_name, restrictions, path, expected) => {
    expect(refusal(restrictions, { paths: pathReadings(path) })).toBe(expected);
  });
});

describe("compileRestrictions", () => {
  it.each([
    ["a bad CIDR, by its index", { ips: ["203.0.113.0/24", "203.0.113.0/33"] }, /^restrictions\.ips\[1\]: .*0 to 32/],
    ["a zone id", { ips: ["fe80::1%eth0"] }, /^restrictions\.ips\[0\]: .*zone id/],
    ["an empty list", { methods: [] }, /^restrictions\.methods: must have 1 to 100 entries/],
    ["a list of 101", { ips: Array<string>(101).fill("203.0.113.1") }, /^restrictions\.ips: must have 1 to 100 entries/],
    ["a lower-case method", { methods: ["GET", "get"] }, /^restrictions\.methods\[1\]: .*upper-case/],
    ["a referrer without scheme", { referrers: ["acme.example"] }, /^restrictions\.referrers\[0\]: must be a URL/],
    ["a referrer whose star is part of a label", { referrers: ["https://acme.example/", "https://*acme.example/*"] }, /^restrictions\.referrers\[1\]: must use \* in the host only as whole labels/],
    ["a path with a star inside a segment", { paths: ["/calls*"] }, /^restrictions\.paths\[0\]: /],
  ] satisfies [string, Restrictions, RegExp][])("refuses %s", (_name, restrictions, reason) => {
    const compiled = compileRestrictions(restrictions);
    expect(compiled.ok).toBe(false);
    expect(!compiled.ok && compiled.reason).toMatch(reason);
  });

  it("takes 100 entries", () => expect(compileRestrictions({ ips: Array<string>(100).fill("203.0.113.1") }).ok).toBe(true));
});

describe("restrictionRefusal on facts built by hand", () => {
  it("refuses a path restriction when the facts hold no reading of the path", () => {
    const compiled = compileRestrictions({ paths: ["/**"] });
    if (!compiled.ok) throw new Error(compiled.reason);
    expect(restrictionRefusal(compiled.value, { address: undefined, referrer: undefined, method: "GET", paths: [], foldedPaths: [] })).toBe("path");
  });
});
