import { describe, expect, it } from "vitest";
import { MAX_ATTEMPTS, nextAttemptAt, retryAfterSeconds } from "./webhook-schedule.ts";

const at = new Date("2026-11-23T10:00:00.000Z");
const after = (attempts: number, random: number, retryAfter?: number) => {
  const next = nextAttemptAt(attempts, at, retryAfter, () => random);
  return next === null ? null : (next.getTime() - at.getTime()) / 1000;
};

describe("the retry schedule", () => {
  it.each([
    [1, 5], [2, 300], [3, 1_800], [4, 7_200], [5, 18_000], [6, 36_000], [7, 36_000],
  ])("after failed attempt %i waits %i s (random in the middle)", (attempts, seconds) => {
    expect(after(attempts, 0.5)).toBe(seconds);
  });

  it("spreads each wait over ±10%", () => {
    expect(after(2, 0)).toBe(270);
    expect(after(2, 0.999999)).toBeCloseTo(330, 0);
    expect(after(1, 0)).toBe(4.5);
  });

  it("gives up after the eighth attempt", () => {
    expect(MAX_ATTEMPTS).toBe(8);
    expect(after(8, 0.5)).toBeNull();
    expect(after(9, 0.5)).toBeNull();
  });

  it("honours a Retry-After of up to an hour in place of the schedule's wait, longer or shorter", () => {
    expect(after(1, 0.5, 120)).toBe(120);
    expect(after(6, 0.5, 60)).toBe(60);
    expect(after(2, 0.5, 3_600)).toBe(3_600);
    expect(after(2, 0.5, 0)).toBe(0);
  });

  it("keeps its own wait when Retry-After asks for over an hour", () => {
    expect(after(2, 0.5, 3_601)).toBe(300);
    expect(after(2, 0.5, 86_400)).toBe(300);
  });

  it("gives up after the eighth attempt whatever Retry-After says", () => {
    expect(after(8, 0.5, 10)).toBeNull();
  });
});

describe("Retry-After", () => {
  it.each([
    ["120", 120],
    [" 7 ", 7],
    ["0", 0],
    ["Mon, 23 Nov 2026 10:01:30 GMT", 90],
    ["Monday, 23-Nov-26 10:01:30 GMT", 90],
    ["Mon, 23 Nov 2026 09:00:00 GMT", 0],
  ])("%j is %i s", (header, seconds) => {
    expect(retryAfterSeconds(header, at)).toBe(seconds);
  });

  it.each([[undefined], [""], ["-5"], ["1.5"], ["soon"], ["2026-11-23T10:01:30Z"], ["12345678901"]])("%j is none", (header) => {
    expect(retryAfterSeconds(header, at)).toBeUndefined();
  });
});
