import type { Changes } from "../../domain/keys/key-event.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import type { Queryable } from "../../store/database.ts";
import { balanceDelete, balanceLock, balanceSet } from "../../store/policy/policies.ts";
import { liveRemaining } from "./credits.ts";

// What setting a policy changes beside the policy itself (docs/adr/0013-policy-counting.md): a policy
// with credits starts its balance again from their `remaining` (a new generation, so units processes
// hold of the old one are void); a policy without credits leaves no balance behind.

const same = (a: Policy | null, b: Policy | null) => JSON.stringify(a) === JSON.stringify(b);

/** A key event's `changes.policy`, when the policy (both in documented order) changed. */
export function policyChanges(before: Policy | null, after: Policy | null): Changes {
  return same(before, after) ? {} : { policy: [before, after] };
}

/**
 * Writes the balance `after` calls for, in the policy's transaction, and says how the live balance
 * moved: a key event's `changes.credits`, when it did (null for none).
 */
export async function resetBalance(tx: Queryable, holder: string, before: Policy | null, after: Policy | null, now: Date): Promise<Changes> {
  const was = before?.credits ? liveRemaining(await balanceLock(tx, holder), before.credits, now) : null;
  let is: number | null = null;
  if (after?.credits) is = (await balanceSet(tx, holder, after.credits.remaining, now)).remaining;
  else await balanceDelete(tx, holder);
  return was === is ? {} : { credits: [was, is] };
}
