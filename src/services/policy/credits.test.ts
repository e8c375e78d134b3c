import { describe, expect, it } from "vitest";
import { creditsView, liveRemaining } from "./credits.ts";

// A balance as a reader sees it (docs/api.md, "Key policy"): a refill that is due is shown applied.
const at = (iso: string) => new Date(iso);
const monthly31 = { remaining: 100, refill: { amount: 500, interval: "monthly" as const, day: 31 } };
const daily = { remaining: 100, refill: { amount: 300, interval: "daily" as const } };

describe("liveRemaining", () => {
  it.each<[string, Parameters<typeof liveRemaining>[0], Parameters<typeof liveRemaining>[1], string, number]>([
    ["no row yet: the policy's own remaining", undefined, daily, "2026-02-10T12:00:00Z", 100],
    ["no refill: the row's", { remaining: 7, refilledAt: at("2020-01-01T00:00:00Z"), generation: 3 }, { remaining: 100 }, "2026-02-10T12:00:00Z", 7],
    ["refilled since the last refill instant: the row's", { remaining: 7, refilledAt: at("2026-02-10T00:00:00Z"), generation: 1 }, daily, "2026-02-10T23:59:59.999Z", 7],
    ["a daily refill due at midnight", { remaining: 7, refilledAt: at("2026-02-10T00:00:00Z"), generation: 1 }, daily, "2026-02-11T00:00:00Z", 300],
    ["a refill on the 31st, due on February's last day", { remaining: 7, refilledAt: at("2026-01-31T00:00:00Z"), generation: 1 }, monthly31, "2026-02-28T00:00:00Z", 500],
    ["not yet due the day before", { remaining: 7, refilledAt: at("2026-01-31T00:00:00Z"), generation: 1 }, monthly31, "2026-02-27T23:59:59Z", 7],
  ])("%s", (_what, balance, credits, now, expected) => {
    expect(liveRemaining(balance, credits, at(now))).toBe(expected);
  });
});

describe("creditsView", () => {
  it("gives the next refill, or null without one", () => {
    expect(creditsView(5, monthly31, at("2026-02-10T12:00:00Z"))).toEqual({ remaining: 5, nextRefillAt: at("2026-02-28T00:00:00Z") });
    expect(creditsView(5, daily, at("2026-02-10T12:00:00Z"))).toEqual({ remaining: 5, nextRefillAt: at("2026-02-11T00:00:00Z") });
    expect(creditsView(5, { remaining: 5 }, at("2026-02-10T12:00:00Z"))).toEqual({ remaining: 5, nextRefillAt: null });
  });
});
