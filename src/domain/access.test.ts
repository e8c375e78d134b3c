import { describe, expect, it } from "vitest";
import { mayReach, type PathScopes } from "./access.ts";
import { applicationScope, customerScope, domainScope, subscriberScope, type Scope } from "./scope.ts";

// Every caller level against every path family, from a table written from docs/api.md
// ("Verification"), not from the code: Y may reach, N may not.
const acme = customerScope(1);
const d1 = domainScope(1, 10);
const ivr = applicationScope(1, 10, 100);
const sub = subscriberScope(1, 10, 1000);

const CALLERS: Record<string, Scope> = {
  customer: acme,
  domain: d1,
  application: ivr,
  subscriber: sub,
  "customer-level user": acme, // a user's key has its user's level
  "domain-level user": d1,
};

const both = (s: Scope): PathScopes => ({ gate: s, target: s });
const FAMILIES: Record<string, [PathScopes | undefined, string, boolean]> = {
  "customer path (/customers/acme/...)": [both(acme), "GET", false],
  "domain path (/domains/d1/...)": [both(d1), "POST", false],
  "application path (/applications/ivr/calls)": [both(ivr), "PUT", false],
  "subscriber path (/subscribers/1000/...)": [both(sub), "DELETE", false],
  "a path with no scope prefix (/calls)": [undefined, "POST", false],
  "the application's configuration, GET": [both(ivr), "GET", true],
  "the application's configuration, HEAD": [both(ivr), "HEAD", true],
  "the application's configuration, PUT": [both(ivr), "PUT", true],
  "the application's configuration under its customer, PUT": [{ gate: acme, target: ivr }, "PUT", true],
};

const TABLE: Record<string, string> = {
  //                     cust dom app sub none cfgGET cfgHEAD cfgPUT cfgPUT-under-customer
  customer:               "Y   Y   Y   Y   Y    Y      Y       Y      Y",
  domain:                 "N   Y   Y   Y   Y    Y      Y       Y      N",
  application:            "N   N   Y   N   Y    Y      Y       N      N",
  subscriber:             "N   N   N   Y   Y    N      N       N      N",
  "customer-level user":  "Y   Y   Y   Y   Y    Y      Y       Y      Y",
  "domain-level user":    "N   Y   Y   Y   Y    Y      Y       Y      N",
};

describe("mayReach: every caller level on every path family", () => {
  const cases = Object.entries(TABLE).flatMap(([caller, row]) =>
    row.trim().split(/\s+/).map((mark, i) => {
      const [family, named] = Object.entries(FAMILIES)[i]!;
      return [caller, family, named, mark === "Y"] as const;
    }),
  );
  it.each(cases)("a %s key on %s", (caller, _family, [named, method, atApplication], expected) => {
    expect(mayReach(CALLERS[caller]!, named, method, atApplication)).toBe(expected);
  });
  it("covers every caller level and family", () => expect(cases).toHaveLength(6 * 9));
});
