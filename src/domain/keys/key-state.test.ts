import { describe, expect, it } from "vitest";
import { isExpired, keyState } from "./key-state.ts";

const at = (iso: string) => new Date(iso);
const NOW = at("2026-11-23T10:00:00.000Z");

describe("keyState", () => {
  it.each([
    ["an active key without expiry", { active: true, expiresAt: null }, "active"],
    ["a disabled key without expiry", { active: false, expiresAt: null }, "disabled"],
    ["an active key a second before its expiry", { active: true, expiresAt: at("2026-11-23T10:00:01.000Z") }, "active"],
    ["an active key at the instant of its expiry", { active: true, expiresAt: NOW }, "expired"],
    ["an active key a second after its expiry", { active: true, expiresAt: at("2026-11-23T09:59:59.000Z") }, "expired"],
    ["a disabled key before its expiry", { active: false, expiresAt: at("2026-11-24T00:00:00.000Z") }, "disabled"],
    ["a disabled key after its expiry (gone, not merely disabled)", { active: false, expiresAt: at("2026-11-22T00:00:00.000Z") }, "expired"],
  ] as const)("%s is %s", (_what, key, state) => {
    expect(keyState(key, NOW)).toBe(state);
  });

  it("counts a millisecond", () => {
    expect(isExpired(at("2026-11-23T10:00:00.001Z"), NOW)).toBe(false);
    expect(isExpired(at("2026-11-23T09:59:59.999Z"), NOW)).toBe(true);
    expect(isExpired(null, NOW)).toBe(false);
  });
});
