import { describe, expect, it } from "vitest";
import { mayReach, type PathScopes } from "./access.ts";
import { pathTargets } from "./platform-path.ts";
import { applicationScope, customerScope, domainScope, subscriberScope, type Scope, type ScopeRefs } from "./scope.ts";

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

// The level rules on every spelling of a path (docs/api.md, "Verification"): a key of domain d1 asks
// for paths naming d1 or d2 (both acme's), each reading named by pathTargets judged as verification
// judges them (every reading must pass), over a directory that knows d1, d2, acme and `self`.
describe("mayReach on every spelling of a path", () => {
  const d2 = domainScope(1, 20);
  const directory: Record<string, Scope> = { d1, d2, self: d1, acme };
  const named = (refs: ScopeRefs): PathScopes | undefined => {
    const ids = [refs.customer, refs.domain, refs.application, refs.subscriber].filter((id) => id !== undefined);
    const scopes = ids.map((id) => directory[id]);
    if (scopes.some((s) => s === undefined)) return undefined;
    return { gate: scopes[0]!, target: scopes[scopes.length - 1]! };
  };
  const reaches = (path: string, method = "DELETE") => {
    const targets = pathTargets(path);
    return targets !== undefined && targets.every(({ refs, atApplication }) => {
      if (Object.keys(refs).length === 0) return mayReach(d1, undefined, method, atApplication);
      const scopes = named(refs);
      return scopes !== undefined && mayReach(d1, scopes, method, atApplication);
    });
  };
  it.each([
    ["its own domain", "/domains/d1/trunks", true],
    ["another domain", "/domains/d2/trunks", false],
    ["another domain, a capital keyword", "/Domains/d2/trunks", false],
    ["another domain, in capitals", "/DOMAINS/d2/trunks", false],
    ["another domain, a dotless i", "/domaıns/d2/trunks", false],
    ["another domain, an encoded capital İ", "/DOMA%C4%B0NS/d2/trunks", false],
    ["another domain, a parameter on the keyword", "/domains;v=1/d2/trunks", false],
    ["another domain, a parameter on the identifier", "/domains/d2;x/trunks", false],
    ["another domain, capitals and a parameter", "/Domains;v=1/d2/trunks", false],
    ["another domain, a dot-dot parameter", "/domains/d1/..;/d2/trunks", false],
    ["another domain, a capital keyword after %2F", "/domains/d1/..%2F..%2FDomains%2Fd2/trunks", false],
    ["another domain, a capital keyword after a dot-dot", "/x/../Domains/d2/trunks", false],
    ["its customer, Tenants", "/Tenants/acme/domains/d1/trunks", false],
    ["its customer, TENANTS", "/TENANTS/acme/x", false],
    ["its customer, a parameter on the keyword", "/customers;x/acme/x", false],
    ["its own domain, a capital keyword", "/Domains/d1/trunks", true],
    ["its own domain, a parameter on the keyword", "/domains;v=1/d1/trunks", true],
    ["its own domain, a parameter on the resource", "/domains/d1/trunks;v=1", true],
    ["its own domain, a parameter on the identifier: no entity is named so", "/domains/d1;v=1/trunks", false],
    ["self with a parameter", "/domains/self;v=1/trunks", false],
    ["a path naming no scope, in capitals", "/TRUNKS/x", true],
  ])("%s: %s", (_name, path, expected) => expect(reaches(path)).toBe(expected));
});
