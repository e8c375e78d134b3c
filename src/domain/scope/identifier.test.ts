import { describe, expect, it } from "vitest";
import { parseIdentifier, parseNamed, parseWithSelf } from "./identifier.ts";

describe("parseIdentifier", () => {
  it.each([
    ["self", { kind: "self" }],
    ["42", { kind: "id", id: 42 }],
    ["2147483647", { kind: "id", id: 2147483647 }],
    ["2147483648", { kind: "name", name: "2147483648" }],
    ["0b5d2f7e-3c1a-4b8e-9f00-1234567890AB", { kind: "uuid", uuid: "0b5d2f7e-3c1a-4b8e-9f00-1234567890ab" }],
    ["acme", { kind: "name", name: "acme" }],
    ["sip.acme.example", { kind: "name", name: "sip.acme.example" }],
  ])("%s", (segment, expected) => {
    expect(parseIdentifier(segment)).toEqual(expected);
  });

  it("reads self as the caller's own id, or nothing when it has none", () => {
    expect(parseWithSelf("self", 7)).toEqual({ kind: "id", id: 7 });
    expect(parseWithSelf("self", null)).toBeUndefined();
    expect(parseWithSelf("acme", null)).toEqual({ kind: "name", name: "acme" });
  });

  it("reads self as a plain name where nobody is self", () => {
    expect(parseNamed("self")).toEqual({ kind: "name", name: "self" });
    expect(parseNamed("7")).toEqual({ kind: "id", id: 7 });
  });
});
