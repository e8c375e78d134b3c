import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { verifyBody } from "./schemas.ts";
import { plainVerifyBody } from "./verify-routes.ts";

describe("plainVerifyBody", () => {
  // Single UTF-16 code units too: lone surrogates and NUL, which neither may take (docs/api.md, "Text").
  const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
  const text = fc.oneof(
    fc.string({ maxLength: 20 }), fc.constantFrom("/", "/customers/acme", "get", "PoSt", "GET1", "", "x".repeat(257), "/\uD800", "XI\u0000"),
    fc.string({ minLength: 250, maxLength: 300 }), fc.string({ unit: codeUnit, maxLength: 20 }).map((s) => `/${s}`),
  );
  const value = fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean(), fc.array(fc.string(), { maxLength: 2 }));
  const body = fc.record({ key: value, path: value, method: value, extra: value }, { requiredKeys: [] });

  it("reads a body exactly as verifyBody does, or leaves it to verifyBody", () => {
    fc.assert(fc.property(fc.oneof(body, value), (input) => {
      const plain = plainVerifyBody(input);
      const parsed = verifyBody.safeParse(input);
      if (plain !== undefined) expect(parsed).toEqual({ success: true, data: plain });
    }), { numRuns: 5_000 });
  });

  it("reads the plain form platform services send", () => {
    expect(plainVerifyBody({ key: "XI00", path: "/customers/acme", method: "post" })).toEqual({ key: "XI00", path: "/customers/acme", method: "POST" });
    expect(plainVerifyBody({ key: "XI00" })).toEqual({ key: "XI00" });
    expect(plainVerifyBody({ key: "XI00", path: "customers" })).toBeUndefined();
  });
});
