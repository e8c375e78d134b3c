import type { Application, Customer, Domain, Key, Subscriber } from "../../domain/model.ts";
import type { Credits, Policy } from "../../domain/policy/policy.ts";
import { lastRefillAt, nextRefillAt } from "../../domain/policy/limits/refill.ts";
import { keyHolder } from "../../domain/keys/lineage.ts";
import type { Queryable } from "../../store/database.ts";
import { balanceList, policyHolder, type Balance } from "../../store/policy/policies.ts";

// Credits as a reader sees them (docs/api.md, "Key policy"): wherever a policy is shown, its
// `credits.remaining` is the live balance, a refill that is due already applied (a grant applies it
// for real; until one does, the row still holds the old period's balance). The balance read is short
// of the truth by what processes hold unused in leases, for a second at most (docs/adr/0013).

/** The balance a holder's credits show: its row's, the policy's own when it has no row yet, `amount` when a refill is due. */
export function liveRemaining(balance: Balance | undefined, credits: Credits, now: Date): number {
  if (balance === undefined) return credits.remaining;
  if (credits.refill && balance.refilledAt < lastRefillAt(now, credits.refill)) return credits.refill.amount;
  return balance.remaining;
}

/** The answer of the credits paths: the live balance and the next refill. */
export interface CreditsView {
  remaining: number;
  nextRefillAt: Date | null;
}

export function creditsView(remaining: number, credits: Credits, now: Date): CreditsView {
  return { remaining, nextRefillAt: credits.refill ? nextRefillAt(now, credits.refill) : null };
}

const withRemaining = (policy: Policy, remaining: number): Policy => ({ ...policy, credits: { ...policy.credits!, remaining } });

type Policed = Customer | Domain | Application | Subscriber;

/** An entity's policy as shown: its live balance. */
export async function entityShown<T extends Policed>(db: Queryable, level: "customer" | "domain" | "application" | "subscriber", entity: T, now: Date): Promise<T> {
  return (await entitiesShown(db, level, [entity], now))[0]!;
}

export async function entitiesShown<T extends Policed>(db: Queryable, level: "customer" | "domain" | "application" | "subscriber", entities: T[], now: Date): Promise<T[]> {
  const credited = entities.filter((e) => e.policy?.credits);
  if (credited.length === 0) return entities;
  const balances = await balanceList(db, credited.map((e) => policyHolder(level, e.id)));
  return entities.map((e) => {
    const credits = e.policy?.credits;
    return credits ? { ...e, policy: withRemaining(e.policy!, liveRemaining(balances.get(policyHolder(level, e.id)), credits, now)) } : e;
  });
}

/**
 * Keys as shown: their own policies' and their entities' live balances, read in one statement for
 * them all, and none for keys whose chain has no credits. An entity shared by several keys (the
 * objects of a list) stays shared, so the list's writer still serialises it once.
 */
export async function keysShown<K extends Key>(db: Queryable, keys: K[], now: Date): Promise<K[]> {
  const holders = new Set<string>();
  for (const k of keys) if (hasCredits(k)) for (const [holder, credits] of chain(k)) if (credits) holders.add(holder);
  if (holders.size === 0) return keys;
  const balances = await balanceList(db, [...holders]);
  const copies = new Map<object, Policed>();
  const shown = <T extends Policed>(level: "customer" | "domain" | "application" | "subscriber", e: T | null): T | null => {
    const credits = e?.policy?.credits;
    if (!e || !credits) return e;
    let copy = copies.get(e);
    if (!copy) copies.set(e, (copy = { ...e, policy: withRemaining(e.policy!, liveRemaining(balances.get(policyHolder(level, e.id)), credits, now)) }));
    return copy as T;
  };
  return keys.map((k) => {
    if (!hasCredits(k)) return k;
    const own = k.policy?.credits;
    return {
      ...k,
      policy: own ? withRemaining(k.policy!, liveRemaining(balances.get(keyHolder(k)), own, now)) : k.policy,
      tenant: shown("customer", k.tenant)!,
      domain: shown("domain", k.domain),
      application: shown("application", k.application),
      subscriber: shown("subscriber", k.subscriber),
    };
  });
}

/** Whether anything on a key's chain has credits: asked of every key of a list, so it builds nothing. */
const hasCredits = (k: Key) =>
  !!(k.policy?.credits || k.tenant.policy?.credits || k.domain?.policy?.credits || k.application?.policy?.credits || k.subscriber?.policy?.credits);

/** A key's holders with their credits, if any: its own, and its entities'. */
function chain(k: Key): [string, Credits | undefined][] {
  return [
    [keyHolder(k), k.policy?.credits],
    [policyHolder("customer", k.tenant.id), k.tenant.policy?.credits],
    ...(k.domain ? [[policyHolder("domain", k.domain.id), k.domain.policy?.credits] as [string, Credits | undefined]] : []),
    ...(k.application ? [[policyHolder("application", k.application.id), k.application.policy?.credits] as [string, Credits | undefined]] : []),
    ...(k.subscriber ? [[policyHolder("subscriber", k.subscriber.id), k.subscriber.policy?.credits] as [string, Credits | undefined]] : []),
  ];
}
