import { describe, expect, it } from "vitest";
import { leakPolicyOf } from "./leak-policy.ts";
import type { LeakPolicy, Policy } from "../policy/policy.ts";

// Nearest first: [key, subscriber or application, domain, customer].
describe("leakPolicyOf", () => {
  const limits: Policy = { ratelimits: [{ name: "calls", limit: 1, windowSeconds: 1 }] };
  it.each([
    ["the default, where nothing is set", [null, null, null, null], "rotate"],
    ["the default, where policies set other parts only", [limits, limits, null, limits], "rotate"],
    ["the key's own before every entity's", [{ leakPolicy: "notify" }, { leakPolicy: "disable" }, null, { leakPolicy: "rotate" }], "notify"],
    ["the application's before the domain's and customer's", [null, { leakPolicy: "disable" }, { leakPolicy: "notify" }, { leakPolicy: "rotate" }], "disable"],
    ["the domain's before the customer's", [limits, null, { leakPolicy: "notify" }, { leakPolicy: "disable" }], "notify"],
    ["the customer's, when only it has one", [null, null, null, { leakPolicy: "disable" }], "disable"],
    ["a looser one nearer the key: notify under a customer's disable", [{ leakPolicy: "notify" }, null, null, { leakPolicy: "disable" }], "notify"],
  ] satisfies [string, (Policy | null)[], LeakPolicy][])("takes %s", (_name, policies, expected) => {
    expect(leakPolicyOf(policies, "rotate")).toBe(expected);
  });

  it("falls back to the configured default", () => expect(leakPolicyOf([null, undefined], "notify")).toBe("notify"));
});
