import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { verifyBody } from "../schemas.ts";
import { plainVerifyBody } from "./verify-routes.ts";

describe("plainVerifyBody", () => {
  // Single UTF-16 code units too: lone surrogates and NUL, which neither may take (docs/api.md, "Text").
  const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
  const text = fc.oneof(
    fc.string({ maxLength: 20 }), fc.constantFrom("/", "/customers/acme", "get", "PoSt", "GET1", "", "x".repeat(257), "/\uD800", "XI\u0000"),
    fc.string({ minLength: 250, maxLength: 300 }), fc.string({ unit: codeUnit, maxLength: 20 }).map((s) => `/${s}`),
  );
  const value = fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean(), fc.array(fc.string(), { maxLength: 2 }));
  // A key policy's fields too (docs/api.md, "Key policy"): addresses and not, costs in and out of bounds.
  const ip = fc.oneof(value, fc.constantFrom("203.0.113.7", "2001:db8::1", "::ffff:203.0.113.7", "1.2.3", "01.2.3.4", "1.2.3.4/24", " 1.2.3.4"));
  const cost = fc.oneof(value, fc.integer({ min: -2, max: 1002 }), fc.double(), fc.constant(-0));
  const body = fc.record({ key: value, path: value, method: value, ip, referrer: value, cost, extra: value }, { requiredKeys: [] });

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
    expect(plainVerifyBody({ key: "XI00", ip: "203.0.113.7", referrer: "https://app.acme.example/", cost: 0 }))
      .toEqual({ key: "XI00", ip: "203.0.113.7", referrer: "https://app.acme.example/", cost: 0 });
    expect(plainVerifyBody({ key: "XI00", ip: "203.0.113.7", tenant: "acme" })).toBeUndefined();
  });
});
