import { describe, expect, it } from "vitest";
import { levelOf, mayManage, type Level, type Scope } from "./scope.ts";

// Every pair of caller level and target scope, for a caller at each level of tenant 1 / domain 10 /
// application 100 / subscriber 1000, against targets in the same chain, in siblings, and in another tenant.
const at = (tenantId: number, domainId: number | null = null, applicationId: number | null = null, subscriberId: number | null = null): Scope =>
  ({ tenantId, domainId, applicationId, subscriberId });

const callers: Record<Level, Scope> = {
  customer: at(1),
  domain: at(1, 10),
  application: at(1, 10, 100),
  subscriber: at(1, 10, null, 1000),
};

const targets: Record<string, Scope> = {
  "own customer": at(1),
  "own domain": at(1, 10),
  "own application": at(1, 10, 100),
  "own subscriber": at(1, 10, null, 1000),
  "sibling domain": at(1, 11),
  "application of sibling domain": at(1, 11, 101),
  "sibling application": at(1, 10, 102),
  "sibling subscriber": at(1, 10, null, 1001),
  "other customer": at(2),
  "other customer's domain": at(2, 20),
  "other customer's application": at(2, 20, 200),
  "other customer's subscriber": at(2, 20, null, 2000),
};

const allowed: Record<Level, string[]> = {
  customer: [
    "own customer", "own domain", "own application", "own subscriber", "sibling domain",
    "application of sibling domain", "sibling application", "sibling subscriber",
  ],
  domain: ["own domain", "own application", "own subscriber", "sibling application", "sibling subscriber"],
  application: ["own application"],
  subscriber: ["own subscriber"],
};

const cases = Object.entries(callers).flatMap(([level, caller]) =>
  Object.entries(targets).map(([target, scope]) => ({
    level: level as Level,
    target,
    caller,
    scope,
    expected: allowed[level as Level].includes(target),
  })),
);

describe("mayManage", () => {
  it.each(cases)("$level key on $target: $expected", ({ caller, scope, expected }) => {
    expect(mayManage(caller, scope)).toBe(expected);
  });

  it("covers every level against every target", () => {
    expect(cases).toHaveLength(4 * Object.keys(targets).length);
  });
});

describe("levelOf", () => {
  it.each(Object.entries(callers))("%s", (level, scope) => {
    expect(levelOf(scope)).toBe(level);
  });
});
