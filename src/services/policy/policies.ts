import { notFound } from "../../domain/errors.ts";
import type { Author } from "../../domain/keys/key-event.ts";
import type { Application, Customer, Domain, Subscriber } from "../../domain/model.ts";
import { CREDITS_REMAINING, type Credits, type Policy } from "../../domain/policy/policy.ts";
import { lastRefillAt } from "../../domain/policy/limits/refill.ts";
import { levelOf, type Scope } from "../../domain/scope/scope.ts";
import { keyHolder, type Reach } from "../../domain/keys/lineage.ts";
import type { Queryable } from "../../store/database.ts";
import { entityFind, entityLock, entityPolicyUpdate, TABLES, type PolicedTable } from "../../store/directory/directory.ts";
import { keyLockById, keyRecordUpdate } from "../../store/keys/keys.ts";
import { balanceAdd, balanceList, balanceLock, balanceSet, orderedPolicy, policyHolder, policyParam } from "../../store/policy/policies.ts";
import type { KeysNeeds } from "../keys/needs.ts";
import type { PolicyNeeds } from "./needs.ts";
import { creditsView, entityShown, liveRemaining, type CreditsView } from "./credits.ts";
import { findKey, keyNotFound, refuseSelf } from "../keys/keys.ts";
import { resetBalance } from "./policy-changes.ts";

// Setting policies and balances (docs/api.md, "Key policy"): an entity's policy, and the credits of a
// key's or an entity's. Who may is the routes' concern (the admin, or a key above the entity); a key's
// own policy is set through updateKey. Each change locks its holder's row first, so policy changes and
// balance changes of one holder take turns.

export type PolicedLevel = "customer" | "domain" | "application" | "subscriber";
export type Policed = Customer | Domain | Application | Subscriber;

const TABLE_OF: Record<PolicedLevel, PolicedTable> = {
  customer: TABLES.customers, domain: TABLES.domains, application: TABLES.applications, subscriber: TABLES.subscribers,
};

/** A balance to set, or an amount to add to it (negative to take; the balance never goes below 0). */
export type CreditsChange = { remaining: number } | { add: number };

const noCredits = (what: string) =>
  notFound(`This ${what}'s policy has no credits: set a policy with credits (docs/api.md, "Key policy") before its balance.`);

async function lockEntity(tx: Queryable, level: PolicedLevel, id: number): Promise<Policed> {
  const entity = await entityLock(tx, TABLE_OF[level], id);
  if (!entity) throw notFound(`No such ${level}.`);
  return entity;
}

/** The entity a scope ends at: the one whose policy binds the keys of exactly that scope. */
export async function entityAt(ctx: PolicyNeeds, scope: Scope): Promise<{ level: PolicedLevel; entity: Policed }> {
  const level = levelOf(scope);
  const id = scope.subscriberId ?? scope.applicationId ?? scope.domainId ?? scope.tenantId;
  const entity = await entityFind(ctx.db, TABLE_OF[level], { kind: "id", id }, null);
  if (!entity) throw notFound(`No such ${level}.`);
  return { level, entity };
}

/** An entity's policy as shown, its credits at their live balance; null for none. */
export async function entityPolicy(ctx: PolicyNeeds, level: PolicedLevel, entity: Policed): Promise<Policy | null> {
  return (await entityShown(ctx.db, level, entity, ctx.clock())).policy;
}

/**
 * Replaces an entity's policy (null removes it). Keys embed their entities, so this process forgets
 * every key it verified; others hear the directory's announcement.
 */
export async function setEntityPolicy(ctx: PolicyNeeds, level: PolicedLevel, id: number, policy: Policy | null): Promise<Policy | null> {
  const now = ctx.clock();
  const after = policy && orderedPolicy(policy);
  const entity = await ctx.db.transaction(async (tx) => {
    const before = await lockEntity(tx, level, id);
    await resetBalance(tx, policyHolder(level, id), before.policy, after, now);
    return entityPolicyUpdate(tx, TABLE_OF[level], id, policyParam(after), now);
  });
  ctx.keyCache.clear();
  return entityPolicy(ctx, level, entity);
}

/** An entity's balance and next refill; 404 when its policy has no credits. */
export async function entityCredits(ctx: PolicyNeeds, level: PolicedLevel, entity: Policed): Promise<CreditsView> {
  const credits = entity.policy?.credits;
  if (!credits) throw noCredits(level);
  return shownCredits(ctx, policyHolder(level, entity.id), credits);
}

export async function setEntityCredits(ctx: PolicyNeeds, level: PolicedLevel, id: number, change: CreditsChange): Promise<CreditsView> {
  const now = ctx.clock();
  return ctx.db.transaction(async (tx) => {
    const credits = (await lockEntity(tx, level, id)).policy?.credits;
    if (!credits) throw noCredits(level);
    const { after } = await changeBalance(tx, policyHolder(level, id), credits, change, now);
    return creditsView(after, credits, now);
  });
}

/** A key's own balance and next refill; 404 when the key is not there or its own policy has no credits. */
export async function keyCredits(ctx: PolicyNeeds & KeysNeeds, target: Reach, ref: string): Promise<CreditsView> {
  const found = await findKey(ctx, target, ref);
  if (!found) throw keyNotFound();
  const credits = found.policy?.credits;
  if (!credits) throw noCredits("key");
  return shownCredits(ctx, keyHolder(found), credits);
}

/** Sets or changes a key's own balance: never the calling key's own (403); an `updated` event with `changes.credits`. */
export async function setKeyCredits(ctx: PolicyNeeds & KeysNeeds, target: Reach, ref: string, change: CreditsChange, by: Author): Promise<CreditsView> {
  const now = ctx.clock();
  const found = await findKey(ctx, target, ref);
  if (!found) throw keyNotFound();
  refuseSelf(target, found, "credits");
  const { view, changed } = await ctx.db.transaction(async (tx) => {
    const key = await keyLockById(tx, found.id, now);
    if (!key) throw keyNotFound();
    const credits = key.policy?.credits;
    if (!credits) throw noCredits("key");
    const { before, after } = await changeBalance(tx, keyHolder(key), credits, change, now);
    if (before !== after) await keyRecordUpdate(tx, key.id, by, { credits: [before, after] }, now);
    return { view: creditsView(after, credits, now), changed: before !== after };
  });
  if (changed) ctx.metrics?.keyEvents("updated");
  return view;
}

async function shownCredits(ctx: PolicyNeeds, holder: string, credits: Credits): Promise<CreditsView> {
  const now = ctx.clock();
  const balance = (await balanceList(ctx.db, [holder])).get(holder);
  return creditsView(liveRemaining(balance, credits, now), credits, now);
}

/** A balance set or added to, in its holder's transaction: the live balance before and after. */
async function changeBalance(tx: Queryable, holder: string, credits: Credits, change: CreditsChange, now: Date): Promise<{ before: number; after: number }> {
  const balance = await balanceLock(tx, holder);
  const before = liveRemaining(balance, credits, now);
  if ("remaining" in change) return { before, after: (await balanceSet(tx, holder, change.remaining, now)).remaining };
  const due = credits.refill ? { at: lastRefillAt(now, credits.refill), amount: credits.refill.amount } : null;
  const added = await balanceAdd(tx, holder, change.add, credits.remaining, due, CREDITS_REMAINING.max, now);
  return { before, after: added.remaining };
}
