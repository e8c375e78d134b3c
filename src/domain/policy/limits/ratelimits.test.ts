import { describe, expect, it } from "vitest";
import { pathReadings } from "../../scope/platform-path.ts";
import type { RateLimit } from "../policy.ts";
import { compileRateLimits, countsRequest } from "./ratelimits.ts";
import { requestFacts, type RequestInput } from "../restrictions/request-facts.ts";

// From docs/api.md ("Key policy"): up to 10 limits, names unique (1-64 of A-Za-z0-9._-), limit 1 to
// 10^9, windowSeconds 1 to 2,592,000; `methods` and `paths` choose the requests a limit counts,
// every request by default.
const limit = (extra: Partial<RateLimit> = {}): RateLimit => ({ name: "calls", limit: 100, windowSeconds: 1, ...extra });
const callPath = ["customers", "acme", "calls", "1"];

function counts(rateLimit: RateLimit, input: RequestInput): boolean {
  const compiled = compileRateLimits([rateLimit]);
  if (!compiled.ok) throw new Error(`test input: ${compiled.reason}`);
  return countsRequest(compiled.value[0]!, requestFacts(input));
}

describe("countsRequest", () => {
  it.each([
    ["no filter counts every request", limit(), { method: "DELETE", paths: [["anything"]] }, true],
    ["no filter counts a request that says nothing", limit(), {}, true],
    ["a listed method", limit({ methods: ["POST"] }), { method: "POST" }, true],
    ["a method not listed", limit({ methods: ["POST"] }), { method: "GET" }, false],
    ["a request without method is counted", limit({ methods: ["POST"] }), {}, true],
    ["a matching path", limit({ paths: ["/customers/*/calls/**"] }), { paths: [callPath] }, true],
    ["a path outside", limit({ paths: ["/customers/*/calls/**"] }), { paths: [["customers", "acme", "keys"]] }, false],
    ["a request without path is counted", limit({ paths: ["/customers/*/calls/**"] }), { method: "GET" }, true],
    ["a path one of whose readings matches is counted", limit({ paths: ["/customers/*/calls/**"] }), { paths: [["x"], callPath] }, true],
    ["both filters match", limit({ methods: ["POST"], paths: ["/customers/*/calls/**"] }), { method: "POST", paths: [callPath] }, true],
    ["the method filter refuses", limit({ methods: ["POST"], paths: ["/customers/*/calls/**"] }), { method: "GET", paths: [callPath] }, false],
    ["the path filter refuses", limit({ methods: ["POST"], paths: ["/customers/*/calls/**"] }), { method: "POST", paths: [["x"]] }, false],
  ] satisfies [string, RateLimit, RequestInput, boolean][])("%s", (_name, rateLimit, input, expected) => {
    expect(counts(rateLimit, input)).toBe(expected);
  });
});

// Every spelling an upstream may serve as the limit's path is counted (docs/api.md, "Verification"):
// the scope keywords in any case and `tenants`, `;` parameters, and letter case anywhere in the path.
describe("countsRequest on every spelling of a path", () => {
  const calls = limit({ paths: ["/customers/*/calls/**"] });
  it.each([
    ["the plain path", "/customers/acme/calls/1", true],
    ["tenants", "/tenants/acme/calls/1", true],
    ["a capital keyword", "/Customers/acme/calls/1", true],
    ["a keyword in capitals", "/CUSTOMERS/acme/calls/1", true],
    ["a keyword with a long s (ſ)", "/cuſtomers/acme/calls/1", true],
    ["Tenants", "/Tenants/acme/calls/1", true],
    ["a capital resource", "/customers/acme/Calls/1", true],
    ["a resource in capitals", "/customers/acme/CALLS/1", true],
    ["parameters on the keyword", "/customers;a=b/acme/calls/1", true],
    ["parameters on the identifier", "/customers/acme;v=1/calls/1", true],
    ["parameters on the resource", "/customers/acme/calls;jsessionid=x/1", true],
    ["an encoded parameter", "/customers/acme/calls%3Bx/1", true],
    ["capitals, parameters and an encoded slash", "/Tenants;x/acme/CALLS%2F1", true],
    ["a dot-dot parameter climbing into it", "/customers/acme/x/..;/calls/1", true],
    ["another resource", "/customers/acme/keys/1", false],
    ["another resource, in capitals", "/CUSTOMERS/acme/KEYS/1", false],
  ])("%s: %s", (_name, path, expected) => {
    const facts = requestFacts({ method: "POST", paths: pathReadings(path) });
    expect(countsRequest(compiled(calls), facts)).toBe(expected);
  });

  it("takes a pattern's keywords in any case, and its resource in any case", () => {
    const facts = requestFacts({ paths: pathReadings("/customers/acme/calls/1") });
    expect(countsRequest(compiled(limit({ paths: ["/Tenants/*/CALLS/**"] })), facts)).toBe(true);
  });

  it("takes the characters case-insensitive routers read as ASCII letters for those letters", () => {
    const invoices = compiled(limit({ paths: ["/customers/*/invoices/**", "/customers/*/keys/**"] }));
    expect(countsRequest(invoices, requestFacts({ paths: pathReadings("/customers/acme/\u0131nvoices/1") }))).toBe(true);
    expect(countsRequest(invoices, requestFacts({ paths: pathReadings("/customers/acme/%E2%84%AAeys") }))).toBe(true);
    expect(countsRequest(invoices, requestFacts({ paths: pathReadings("/customers/acme/k\u00e9ys") }))).toBe(false);
  });
});

function compiled(rateLimit: RateLimit) {
  const parsed = compileRateLimits([rateLimit]);
  if (!parsed.ok) throw new Error(`test input: ${parsed.reason}`);
  return parsed.value[0]!;
}

describe("compileRateLimits", () => {
  it.each([
    ["no limits", []],
    ["ten limits", Array.from({ length: 10 }, (_, i) => limit({ name: `l${i}` }))],
    ["the bounds' edges", [limit({ name: "a".repeat(64), limit: 1, windowSeconds: 2_592_000 }), limit({ name: "A.b_c-9", limit: 1_000_000_000, windowSeconds: 1 })]],
  ] satisfies [string, RateLimit[]][])("takes %s", (_name, limits) => expect(compileRateLimits(limits).ok).toBe(true));

  it.each([
    ["eleven limits", Array.from({ length: 11 }, (_, i) => limit({ name: `l${i}` })), /^ratelimits: must have at most 10/],
    ["a name used twice", [limit(), limit({ windowSeconds: 60 })], /^ratelimits\[1\]\.name: "calls" is already/],
    ["an empty name", [limit({ name: "" })], /^ratelimits\[0\]\.name:/],
    ["a name of 65", [limit({ name: "a".repeat(65) })], /^ratelimits\[0\]\.name:/],
    ["a name with a space", [limit({ name: "a b" })], /^ratelimits\[0\]\.name:/],
    ["a name with a slash", [limit({ name: "a/b" })], /^ratelimits\[0\]\.name:/],
    ["a limit of 0", [limit({ limit: 0 })], /^ratelimits\[0\]\.limit: must be a whole number from 1 to 1000000000/],
    ["a limit above 10^9", [limit({ limit: 1_000_000_001 })], /^ratelimits\[0\]\.limit:/],
    ["a fractional limit", [limit({ limit: 1.5 })], /^ratelimits\[0\]\.limit:/],
    ["a window of 0", [limit({ windowSeconds: 0 })], /^ratelimits\[0\]\.windowSeconds: must be a whole number from 1 to 2592000/],
    ["a window above thirty days", [limit({ windowSeconds: 2_592_001 })], /^ratelimits\[0\]\.windowSeconds:/],
    ["an empty methods list", [limit({ methods: [] })], /^ratelimits\[0\]\.methods: must have 1 to 100/],
    ["a bad path", [limit({ paths: ["calls"] })], /^ratelimits\[0\]\.paths\[0\]:/],
  ] satisfies [string, RateLimit[], RegExp][])("refuses %s", (_name, limits, reason) => {
    const compiled = compileRateLimits(limits);
    expect(compiled.ok).toBe(false);
    expect(!compiled.ok && compiled.reason).toMatch(reason);
  });
});
