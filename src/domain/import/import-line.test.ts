import { describe, expect, it } from "vitest";
import { customerScope, domainScope } from "../scope/scope.ts";
import { importLineProblem, importVerdict, type ImportedKey, type ImportLine, type TokenHolder } from "./import-line.ts";

const NOW = new Date("2026-11-28T12:00:00Z");
const TOKEN = "XI0123456789ABCDEF0123456789ABCDEF";
const line = (over: Partial<ImportLine>): ImportLine => ({ customer: "acme", name: "billing", keyId: TOKEN, active: true, ...over });

describe("importLineProblem", () => {
  it.each<[string, Partial<ImportLine>, string | undefined]>([
    ["a customer key", {}, undefined],
    ["a domain key", { domain: "acme.example" }, undefined],
    ["an application key with its type", { domain: "acme.example", application: "ivr", type: "application" }, undefined],
    ["a user's key at a domain", { domain: "acme.example", user: "ann@acme.example" }, undefined],
    ["an application without its domain", { application: "ivr" }, "an application or a subscriber needs its domain"],
    ["a subscriber without its domain", { subscriber: "4412345" }, "an application or a subscriber needs its domain"],
    ["an application and a subscriber", { domain: "d.example", application: "ivr", subscriber: "4412345" }, "a key has an application or a subscriber, not both"],
    ["a user below a domain", { domain: "d.example", subscriber: "4412345", user: "ann@acme.example" }, "a user's key is at its customer's or its domain's level"],
    ["a type its scope does not give", { domain: "d.example", type: "application" }, 'type must be "customer" for this scope'],
    ["a user's key typed customer", { user: "ann@acme.example", type: "customer" }, 'type must be "user" for this scope'],
    ["an expiry already past", { expiresAt: new Date("2026-11-28T11:59:59Z") }, "expiresAt must lie in the future"],
    ["an expiry now", { expiresAt: NOW }, "expiresAt must lie in the future"],
    ["an expiry to come", { expiresAt: new Date("2027-01-01T00:00:00Z") }, undefined],
  ])("%s", (_name, over, problem) => {
    expect(importLineProblem(line(over), NOW)).toBe(problem);
  });
});

describe("importVerdict", () => {
  const key: ImportedKey = { scope: domainScope(1, 2), userId: null, name: "billing", active: true, expiresAt: null, policy: null };
  const held = (over: Partial<TokenHolder>): TokenHolder => ({ ...key, id: 7, gone: false, ...over });
  it.each<[string, TokenHolder | undefined, boolean, ReturnType<typeof importVerdict>]>([
    ["a new token and a free name: created", undefined, false, { status: "created" }],
    ["the same key: unchanged", held({}), false, { status: "unchanged", id: 7 }],
    ["the same key disabled: updated", held({ active: false }), false, { status: "updated", id: 7 }],
    ["the same key with another expiry: updated", held({ expiresAt: new Date("2027-01-01T00:00:00Z") }), false, { status: "updated", id: 7 }],
    ["the same key with another policy: updated", held({ policy: '{"credits":{"remaining":5}}' }), false, { status: "updated", id: 7 }],
    ["the token of a deleted key", held({ gone: true }), false,
      { status: "conflict", message: "This token was a key that is deleted or expired: a token is never issued twice." }],
    ["the token of a key in another scope", held({ scope: customerScope(1) }), false, { status: "conflict", message: "This token is another key's (another scope or name)." }],
    ["the token of a key of another name", held({ name: "other" }), false, { status: "conflict", message: "This token is another key's (another scope or name)." }],
    ["a new token whose name is taken", undefined, true,
      { status: "conflict", message: 'A key named "billing" already exists in this scope with another token.' }],
  ])("%s", (_name, byToken, nameTaken, verdict) => {
    expect(importVerdict(key, byToken, nameTaken)).toEqual(verdict);
  });

  it("a user who has another live key: conflict", () => {
    expect(importVerdict({ ...key, userId: 4 }, undefined, true)).toEqual({ status: "conflict", message: "This user already has another live key." });
  });
});
