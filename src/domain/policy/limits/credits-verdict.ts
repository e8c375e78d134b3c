import type { PolicyLevel, Refill } from "../policy.ts";
import { LEVELS } from "../../scope/scope.ts";
import { nextRefillAt } from "./refill.ts";

// One request's cost against every balance on the way from the customer down to the key (docs/api.md,
// "Key policy"): charged to all of them or to none. A balance below the cost refuses, and for a cost
// of 0 an empty balance does, as a cost of 1 would be refused there.

export interface Balance {
  scope: PolicyLevel;
  /** The live balance, refills already applied. */
  remaining: number;
  refill?: Refill | undefined;
}

export interface CreditsVerdict {
  admitted: boolean;
  /** The nearest balance to the key, after the charge when admitted; none without credits. */
  remaining: number | undefined;
  /** When refused: seconds until every balance that refused it has refilled; none when one never refills. */
  retryAfter: number | undefined;
}

export function judgeCredits(balances: readonly Balance[], cost: number, now: Date): CreditsVerdict {
  const needed = cost >= 1 ? cost : 1;
  const short = balances.filter((b) => b.remaining < needed);
  const admitted = short.length === 0;
  const nearest = balances.reduce<Balance | undefined>((best, b) => (best === undefined || depth(b.scope) > depth(best.scope) ? b : best), undefined);
  const remaining = nearest === undefined ? undefined : nearest.remaining - (admitted ? cost : 0);
  return { admitted, remaining, retryAfter: admitted ? undefined : untilRefilled(short, now) };
}

function untilRefilled(short: readonly Balance[], now: Date): number | undefined {
  let seconds = 0;
  for (const { refill } of short) {
    if (refill === undefined) return undefined;
    seconds = Math.max(seconds, Math.ceil((nextRefillAt(now, refill).getTime() - now.getTime()) / 1000));
  }
  return seconds;
}

/** How far in from the customer: the key is nearest of all. */
function depth(scope: PolicyLevel): number {
  return scope === "key" ? LEVELS.length : LEVELS.indexOf(scope);
}
