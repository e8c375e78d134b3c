import type { Author, KeyAction, LeakChanges } from "../../domain/keys/key-event.ts";
import { isExpired } from "../../domain/keys/key-state.ts";
import type { StoredKey } from "../../domain/model.ts";
import { leakPolicyOf } from "../../domain/leaks/leak-policy.ts";
import type { LeakAnswer, LeakReport } from "../../domain/leaks/leak-report.ts";
import type { LeakPolicy } from "../../domain/policy/policy.ts";
import { isTokenFormat, tokenHashHex } from "../../domain/keys/token.ts";
import type { Queryable } from "../../store/database.ts";
import { entityPoliciesFind } from "../../store/policy/entity-policies.ts";
import { keyLeakRecorded, keyRecordLeak, keyStatesByHashes } from "../../store/leaks/key-leaks.ts";
import { keyLockById, keyUpdate } from "../../store/keys/keys.ts";
import type { LeakSettings, LeaksNeeds } from "./needs.ts";
import { rotateLocked } from "../keys/key-rotation.ts";
import { mintToken } from "../keys/keys.ts";

// Leak response (docs/leaks.md): a scanner reports tokens it found in public; each that is or was a
// keyplane key is a true positive, and each live one is acted on by its leak policy, once: the
// `leaked` event, recorded under the key's lock with what the policy changes, is what a report of the
// same token again finds, and then does nothing.

export const DEFAULT_LEAK_SETTINGS: LeakSettings = { policy: "rotate", graceSeconds: 0 };

/** Answers a report, token by token in its order, acting on each live key it names. `by` is the scanner. */
export async function reportLeaks(ctx: LeaksNeeds, reports: readonly LeakReport[], by: Author): Promise<LeakAnswer[]> {
  const scanner = by.actor.type === "scanner" ? by.actor.name : "admin";
  const hashes = reports.map((r) => tokenHashHex(r.token));
  // Only a token of keyplane's form can be one: the others are false positives without a look-up.
  const states = await keyStatesByHashes(ctx.db, hashes.filter((_, i) => isTokenFormat(reports[i]!.token)));
  const answers: LeakAnswer[] = [];
  for (const [i, report] of reports.entries()) {
    const state = states.get(hashes[i]!);
    const now = ctx.clock();
    if (state && state.deletedAt === null && !isExpired(state.expiresAt, now)) {
      await respond(ctx, state.id, { leak: { url: report.url, source: report.source } }, by);
    }
    const label = state ? "true_positive" : "false_positive";
    ctx.metrics?.leakReport(scanner, label);
    answers.push({ token_hash: hashes[i]!, token_type: report.type, label });
  }
  return answers;
}

/** What acting on one key did: its policy, the events it recorded, and the token hash to drop from caches. */
interface Response {
  policy: LeakPolicy;
  actions: KeyAction[];
  hash: string;
}

/** Acts on one live key by its leak policy, unless a report acted on it before (or it is no longer live). */
async function respond(ctx: LeaksNeeds, id: number, changes: LeakChanges, by: Author): Promise<void> {
  const now = ctx.clock();
  const minted = mintToken(ctx); // used only by a rotation: made outside the transaction, which it would lengthen
  const done = await ctx.db.transaction(async (tx): Promise<Response | undefined> => {
    const key = await keyLockById(tx, id, now);
    if (!key || (await keyLeakRecorded(tx, id))) return undefined;
    const entities = await entityPoliciesFind(tx, key);
    const policy = leakPolicyOf([key.policy, entities.subscriber, entities.application, entities.domain, entities.customer], ctx.leaks.policy);
    await keyRecordLeak(tx, id, by, changes, now);
    const actions: KeyAction[] = ["leaked", ...(await act(ctx, tx, key, policy, minted, by, now))];
    return { policy, actions, hash: key.hash.toString("hex") };
  });
  if (!done) return;
  // The key changed, or may have: this process must not serve it from its cache (the others hear of it).
  ctx.keyCache.invalidate(done.hash);
  for (const action of done.actions) ctx.metrics?.keyEvents(action);
  ctx.metrics?.leakAction(done.policy);
  ctx.log.warn({ key: id, policy: done.policy, scanner: by.actor.type === "scanner" ? by.actor.name : undefined }, "key reported leaked");
}

/** What `policy` does to a key locked in `tx`: the actions of the events it records beside `leaked`. */
async function act(
  ctx: LeaksNeeds, tx: Queryable, key: StoredKey, policy: LeakPolicy, minted: ReturnType<typeof mintToken>, by: Author, now: Date,
): Promise<KeyAction[]> {
  const unchanged = { name: key.name, active: key.active, activeAt: key.activeAt, expiresAt: key.expiresAt };
  switch (policy) {
    case "notify":
      return [];
    case "disable":
      if (!key.active) return [];
      await keyUpdate(tx, key.id, { ...unchanged, active: false }, by, { active: [true, false] }, now);
      return ["updated"];
    case "rotate": {
      const graceEnd = new Date(now.getTime() + ctx.leaks.graceSeconds * 1000);
      if (key.replacedBy === null) {
        // The successor keeps the key's expiry: a leak must not lengthen a key's life.
        await rotateLocked(tx, key, { hash: minted.hash, sealed: minted.sealed, expiresAt: key.expiresAt }, ctx.leaks.graceSeconds, by, now);
        return ["rotated", "created"];
      }
      // Rotated already, and in its grace period: a successor holds its place, so its grace is cut short.
      if (key.expiresAt !== null && key.expiresAt <= graceEnd) return [];
      await keyUpdate(tx, key.id, { ...unchanged, expiresAt: graceEnd }, by, { expiresAt: [key.expiresAt?.toISOString() ?? null, graceEnd.toISOString()] }, now);
      return ["updated"];
    }
  }
}
