import { describe, expect, it } from "vitest";
import { formatRef, parseRef, refOf } from "./object-ref.ts";

describe("namespace/name references", () => {
  it("round-trips an object's reference", () => {
    const ref = refOf({ metadata: { namespace: "team-a", name: "billing" } });
    expect(formatRef(ref)).toBe("team-a/billing");
    expect(parseRef(formatRef(ref))).toEqual(ref);
  });

  it.each([[null], [17], [""], ["billing"], ["/billing"], ["team-a/"]])("reads no reference from %j", (text) => {
    expect(parseRef(text)).toBeUndefined();
  });

  it("keeps a name that holds a slash whole (the first slash ends the namespace)", () => {
    expect(parseRef("team-a/x/y")).toEqual({ namespace: "team-a", name: "x/y" });
  });
});
