import { describe, expect, it } from "vitest";
import { policyObject } from "./policy-schema.ts";

// The policy schema refuses each rule of docs/api.md ("Key policy") with a message naming the field,
// whether the schema states the rule or the domain's compilePolicy knows it.
const issue = (value: unknown) => {
  const result = policyObject.safeParse(value);
  return result.success ? undefined : result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
};
const limit = (over: object = {}) => ({ name: "calls", limit: 1, windowSeconds: 1, ...over });

describe("policyObject", () => {
  it.each<[string, unknown, RegExp]>([
    ["a field no policy has", { quota: 1 }, /Unrecognized key: "quota"/],
    ["a field no restrictions have", { restrictions: { countries: ["SE"] } }, /restrictions: Unrecognized key/],
    ["an empty list", { restrictions: { ips: [] } }, /restrictions\.ips: must have at least 1/],
    ["101 entries", { restrictions: { paths: Array.from({ length: 101 }, () => "/a") } }, /restrictions\.paths: must have at most 100/],
    ["an entry over 2048 characters", { restrictions: { referrers: [`https://${"a".repeat(2041)}`] } }, /restrictions\.referrers\.0: must be at most 2048/],
    ["a lone surrogate", { restrictions: { paths: ["/\uD800"] } }, /well-formed Unicode/],
    ["a method in lower case", { restrictions: { methods: ["get"] } }, /upper-case HTTP method/],
    ["an address that is none", { restrictions: { ips: ["10.0.0.1", "999.0.0.1"] } }, /^restrictions\.ips\.1: must be an IPv4 or IPv6 address or CIDR/],
    ["a prefix too long", { restrictions: { ips: ["2001:db8::/129"] } }, /restrictions\.ips\.0: must be an IPv4 or IPv6 address or CIDR \(a prefix length of 0-32 or 0-128\)/],
    ["a referrer that is no URL", { restrictions: { referrers: ["acme.example"] } }, /restrictions\.referrers\.0: must be a URL/],
    ["a star inside a path segment", { restrictions: { paths: ["/calls*"] } }, /restrictions\.paths\.0: must be a path starting with \/, with \* and \*\* only as whole segments/],
    ["11 rate limits", { ratelimits: Array.from({ length: 11 }, (_, i) => limit({ name: `l${i}` })) }, /ratelimits: must have at most 10/],
    ["two limits of one name", { ratelimits: [limit(), limit({ limit: 2 })] }, /ratelimits\[1\]\.name: "calls" is already the name/],
    ["a name of 65 characters", { ratelimits: [limit({ name: "n".repeat(65) })] }, /ratelimits\.0\.name: name must be 1-64/],
    ["a limit of 0", { ratelimits: [limit({ limit: 0 })] }, /ratelimits\.0\.limit: limit must be at least 1/],
    ["a limit over 10^9", { ratelimits: [limit({ limit: 1_000_000_001 })] }, /limit must be at most 1000000000/],
    ["a window of 30 days and a second", { ratelimits: [limit({ windowSeconds: 2_592_001 })] }, /windowSeconds must be at most 2592000/],
    ["a window not whole", { ratelimits: [limit({ windowSeconds: 0.5 })] }, /windowSeconds must be a whole number/],
    ["credits below 0", { credits: { remaining: -1 } }, /credits\.remaining: remaining must be at least 0/],
    ["credits over 10^12", { credits: { remaining: 1e12 + 1 } }, /remaining must be at most 1000000000000/],
    ["a weekly refill", { credits: { remaining: 1, refill: { amount: 1, interval: "weekly" } } }, /credits\.refill\.interval/],
    ["a refill on day 32", { credits: { remaining: 1, refill: { amount: 1, interval: "monthly", day: 32 } } }, /day must be at most 31/],
    ["a refill of nothing", { credits: { remaining: 1, refill: { amount: 0, interval: "daily" } } }, /amount must be at least 1/],
    ["credits as text", { credits: { remaining: "10" } }, /remaining must be a number/],
    ["a leak policy it does not know", { leakPolicy: "revoke" }, /leakPolicy: /],
    ["a leak policy that is not text", { leakPolicy: true }, /leakPolicy: /],
  ])("refuses %s", (_what, value, message) => {
    expect(issue(value)).toMatch(message);
  });

  it.each<[string, unknown]>([
    ["an empty policy", {}],
    ["every part at its bounds", {
      restrictions: { ips: ["0.0.0.0/0", "::/0", "::ffff:10.0.0.1"], referrers: ["*"], methods: ["GET", "M-SEARCH"], paths: ["/**", "/a/*/b"] },
      ratelimits: Array.from({ length: 10 }, (_, i) => limit({ name: `l${i}`, limit: 1_000_000_000, windowSeconds: 2_592_000, methods: ["POST"], paths: ["/x"] })),
      credits: { remaining: 1e12, refill: { amount: 1e12, interval: "monthly", day: 31 } },
    }],
    ["credits of 0 without a refill", { credits: { remaining: 0 } }],
    ["a leak policy alone", { leakPolicy: "notify" }],
    ["a leak policy beside limits", { ratelimits: [limit()], leakPolicy: "disable" }],
  ])("takes %s as it is", (_what, value) => {
    expect(policyObject.parse(value)).toEqual(value);
  });
});
