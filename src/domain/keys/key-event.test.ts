import { describe, expect, it } from "vitest";
import { changesBetween, type Tracked } from "./key-event.ts";

const key: Tracked = { name: "billing", active: true, expiresAt: null, replacedBy: null };

describe("changesBetween", () => {
  it("gives a new key's fields that have a value, each from null", () => {
    expect(changesBetween(undefined, key)).toEqual({ name: [null, "billing"], active: [null, true] });
    expect(changesBetween(undefined, { ...key, expiresAt: new Date("2026-12-01T00:00:00Z") })).toMatchObject({
      expiresAt: [null, "2026-12-01T00:00:00.000Z"],
    });
  });

  it("gives only what changed, times as RFC 3339 text", () => {
    expect(changesBetween(key, key)).toEqual({});
    expect(changesBetween(key, { ...key, name: "invoices", active: false })).toEqual({ name: ["billing", "invoices"], active: [true, false] });
    const expiring = { ...key, expiresAt: new Date("2026-12-01T00:00:00Z") };
    expect(changesBetween(expiring, key)).toEqual({ expiresAt: ["2026-12-01T00:00:00.000Z", null] });
    expect(changesBetween(expiring, { ...expiring, expiresAt: new Date("2026-12-01T00:00:00Z") })).toEqual({});
  });

  it("shows a rotation as the successor's id and the old key's new expiry", () => {
    const rotated = { ...key, replacedBy: 18, expiresAt: new Date("2026-11-23T11:00:00Z") };
    expect(changesBetween(key, rotated)).toEqual({ replacedBy: [null, 18], expiresAt: [null, "2026-11-23T11:00:00.000Z"] });
  });
});
