import { describe, expect, it } from "vitest";
import { canonicalPath, keywordOf } from "./scope-keywords.ts";

// From docs/api.md ("Verification"): the scope keywords in any letter case read as lower case, and
// `tenants` as `customers`, where the scope grammar has a keyword; nothing else changes.
describe("keywordOf", () => {
  it.each([
    ["customers", "customers"],
    ["tenants", "customers"],
    ["Tenants", "customers"],
    ["DOMAINS", "domains"],
    ["aPPlications", "applications"],
    ["Subscribers", "subscribers"],
    ["domaıns", "domains"],
    ["DOMAİNS", "domains"],
    ["ſubſcribers", "subscribers"],
    ["cuſtomers", "customers"],
    ["domain", undefined],
    ["customer", undefined],
    ["domains;v=1", undefined],
    ["domains ", undefined],
    ["dömains", undefined],
    ["keys", undefined],
    ["", undefined],
  ])("%j is %j", (segment, keyword) => expect(keywordOf(segment)).toBe(keyword));
});

describe("canonicalPath", () => {
  it.each([
    [["Tenants", "acme", "Domains", "d1", "SUBSCRIBERS", "1212", "Calls"], ["customers", "acme", "domains", "d1", "subscribers", "1212", "Calls"]],
    [["customers", "tenants", "domains", "Applications"], ["customers", "tenants", "domains", "Applications"]],
    [["Domains", "", "Domains"], ["domains", "", "Domains"]],
    [["Applications", "ivr", "Subscribers", "x"], ["applications", "ivr", "Subscribers", "x"]],
    [["Calls", "Domains", "x"], ["Calls", "Domains", "x"]],
  ])("%j is %j", (segments, expected) => expect(canonicalPath(segments)).toEqual(expected));

  it("hands back the same segments when they are canonical already", () => {
    const segments = ["customers", "acme", "domains", "d1", "calls"];
    expect(canonicalPath(segments)).toBe(segments);
  });
});
