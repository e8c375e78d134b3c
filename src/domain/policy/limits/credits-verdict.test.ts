import { describe, expect, it } from "vitest";
import { judgeCredits, type Balance } from "./credits-verdict.ts";

// From docs/api.md ("Key policy"): a request is charged against every balance on the way or none; a
// balance below the cost refuses, and for a cost of 0 an empty one does; the verdict shows the nearest
// balance after the charge; a refusal's Retry-After runs until the next refill, none without one.
const NOW = new Date("2024-03-15T12:00:00Z");
const key = (remaining: number, refill?: Balance["refill"]): Balance => ({ scope: "key", remaining, refill });
const customer = (remaining: number, refill?: Balance["refill"]): Balance => ({ scope: "customer", remaining, refill });
const domain = (remaining: number): Balance => ({ scope: "domain", remaining });
const daily = { amount: 100, interval: "daily" } as const;
const monthly = { amount: 100, interval: "monthly", day: 1 } as const;

describe("judgeCredits", () => {
  it.each([
    // name, balances, cost, admitted, remaining shown, retryAfter
    ["no credits anywhere", [], 1, true, undefined, undefined],
    ["a balance with room: charged", [key(10)], 1, true, 9, undefined],
    ["a cost equal to the balance empties it", [key(10)], 10, true, 0, undefined],
    ["a cost above the balance: refused, nothing charged", [key(10)], 11, false, 10, undefined],
    ["an empty balance refuses a cost of 1", [key(0)], 1, false, 0, undefined],
    ["cost 0 on an empty balance: refused as a cost of 1 would be", [key(0)], 0, false, 0, undefined],
    ["cost 0 with a balance: admitted, nothing charged", [key(5)], 0, true, 5, undefined],
    ["the key's balance is the nearest", [customer(100), key(5)], 3, true, 2, undefined],
    ["a short balance above refuses for all", [customer(2), key(5)], 3, false, 5, undefined],
    ["without the key's own, the domain's is the nearest, in any order", [domain(50), customer(100)], 1, true, 49, undefined],
    ["refused until the next daily refill, 12 hours away", [customer(0, daily), key(5)], 1, false, 5, 12 * 3600],
    ["refused by two: until the later refill, 1 April", [customer(0, daily), key(0, monthly)], 1, false, 0, (16 * 24 + 12) * 3600],
    ["refused by one that never refills: no Retry-After", [customer(0, daily), key(0)], 1, false, 0, undefined],
  ] satisfies [string, Balance[], number, boolean, number | undefined, number | undefined][])(
    "%s",
    (_name, balances, cost, admitted, remaining, retryAfter) => {
      expect(judgeCredits(balances, cost, NOW)).toEqual({ admitted, remaining, retryAfter });
    },
  );
});
