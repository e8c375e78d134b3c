import { describe, expect, it } from "vitest";
import { compilePolicy } from "./compile.ts";
import type { Policy } from "./policy.ts";

// The policy of docs/api.md's example, and each part's bounds ("Key policy"), named from the root.
const EXAMPLE: Policy = {
  restrictions: {
    ips: ["203.0.113.0/24", "2001:db8::/32"],
    referrers: ["https://*.acme.example/*"],
    methods: ["GET", "POST"],
    paths: ["/customers/acme/calls/**"],
  },
  ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1, methods: ["POST"], paths: ["/customers/*/calls/**"] }],
  credits: { remaining: 10000, refill: { amount: 10000, interval: "monthly", day: 1 } },
};

describe("compilePolicy", () => {
  it.each([
    ["the documented example", EXAMPLE],
    ["an empty policy", {}],
    ["credits at their bounds", { credits: { remaining: 0, refill: { amount: 1_000_000_000_000, interval: "monthly", day: 31 } } }],
    ["the most credits, refilled daily", { credits: { remaining: 1_000_000_000_000, refill: { amount: 1, interval: "daily" } } }],
    ...(["disable", "rotate", "notify"] as const).map((leakPolicy) => [`a leak policy of ${leakPolicy} alone`, { leakPolicy }] as [string, Policy]),
  ] satisfies [string, Policy][])("takes %s", (_name, policy) => expect(compilePolicy(policy).ok).toBe(true));

  it.each([
    ["a bad restriction", { restrictions: { ips: ["300.0.0.1"] } }, /^restrictions\.ips\[0\]: /],
    ["a bad rate limit", { ratelimits: [{ name: "x", limit: 0, windowSeconds: 1 }] }, /^ratelimits\[0\]\.limit: /],
    ["a negative balance", { credits: { remaining: -1 } }, /^credits\.remaining: must be a whole number from 0 to 1000000000000/],
    ["a balance above 10^12", { credits: { remaining: 1_000_000_000_001 } }, /^credits\.remaining: /],
    ["a fractional balance", { credits: { remaining: 0.5 } }, /^credits\.remaining: /],
    ["a refill of 0", { credits: { remaining: 1, refill: { amount: 0, interval: "daily" } } }, /^credits\.refill\.amount: must be a whole number from 1/],
    ["a refill day of 0", { credits: { remaining: 1, refill: { amount: 1, interval: "monthly", day: 0 } } }, /^credits\.refill\.day: must be a whole number from 1 to 31/],
    ["a refill day of 32", { credits: { remaining: 1, refill: { amount: 1, interval: "monthly", day: 32 } } }, /^credits\.refill\.day: /],
    ["a weekly refill", { credits: { remaining: 1, refill: { amount: 1, interval: "weekly" as "daily" } } }, /^credits\.refill\.interval: must be "daily" or "monthly"/],
    ["a leak policy it does not know", { leakPolicy: "delete" as "disable" }, /^leakPolicy: must be one of "disable", "rotate", "notify"$/],
    ["a leak policy in another case", { leakPolicy: "Rotate" as "rotate" }, /^leakPolicy: /],
  ] satisfies [string, Policy, RegExp][])("refuses %s", (_name, policy, reason) => {
    const compiled = compilePolicy(policy);
    expect(compiled.ok).toBe(false);
    expect(!compiled.ok && compiled.reason).toMatch(reason);
  });

  // An older release took referrer patterns as one string; a policy stored then still binds its keys.
  it("takes a stored policy whose referrer pattern today's rules refuse, that pattern matching nothing", () => {
    const stored: Policy = { restrictions: { ips: ["203.0.113.0/24"], referrers: ["*://acme.example/*", "https://*.acme.example/*"] }, credits: { remaining: 5 } };
    expect(compilePolicy(stored).ok).toBe(false);
    const compiled = compilePolicy(stored, { stored: true });
    expect(compiled.ok && compiled.value.restrictions?.referrers).toEqual([{ kind: "none" }, expect.objectContaining({ kind: "url", host: ["*", "acme", "example"] })]);
    expect(compiled.ok && compiled.value.credits).toEqual({ remaining: 5 });
  });

  it("keeps the restrictions, the limits and the credits it was given", () => {
    const compiled = compilePolicy(EXAMPLE);
    expect(compiled.ok && compiled.value).toMatchObject({
      restrictions: { methods: new Set(["GET", "POST"]) },
      ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }],
      credits: EXAMPLE.credits,
    });
  });
});
