import type { StoredKey } from "../../domain/model.ts";
import type { PolicyLevel } from "../../domain/policy/policy.ts";
import { resetSeconds, windowStart } from "../../domain/policy/limits/window.ts";
import { balanceList } from "../../store/policy/policies.ts";
import { windowsGranted } from "../../store/policy/policy-counters.ts";
import type { PolicyNeeds } from "./needs.ts";
import { creditsView, liveRemaining } from "./credits.ts";

// What a key has used of the limits and credits that bind it (docs/api.md, "Key policy"), for people
// (the console) and scripts: read from the database, charging nothing. A window's `remaining` is what
// no process has been handed yet: processes hold leases they may not have spent (docs/adr/0013), so it
// is at most that much short of the truth, and never more than the truth.

export interface LimitUsage {
  name: string;
  scope: PolicyLevel;
  /** For an ancestor's limit (docs/api.md, "Restricted keys"): the key whose policy it is. */
  id?: number;
  limit: number;
  windowSeconds: number;
  remaining: number;
  /** Whole seconds until the window ends, at least 1. */
  reset: number;
}

export interface KeyUsage {
  ratelimits: LimitUsage[];
  /** The nearest balance (the key's own, else its innermost entity's), or null where none binds the key. */
  credits: { scope: PolicyLevel; remaining: number; nextRefillAt: Date | null } | null;
}

export async function keyUsage(ctx: PolicyNeeds, key: StoredKey): Promise<KeyUsage> {
  const now = ctx.clock();
  const chain = await ctx.policies.chainOf(key);
  const limits = chain.flatMap((link) => (link.policy.ratelimits ?? []).map((limit) => ({ link, limit })));
  const granted = await windowsGranted(
    ctx.db,
    limits.map(({ link, limit }) => ({ holder: link.holder, name: limit.name, windowStart: windowStart(now.getTime(), limit.windowSeconds) / 1000 })),
  );
  const ratelimits = limits.map(({ link, limit }, i): LimitUsage => ({
    name: limit.name,
    scope: link.scope,
    ...(link.id !== undefined && link.id !== key.id && { id: link.id }),
    limit: limit.limit,
    windowSeconds: limit.windowSeconds,
    remaining: Math.max(0, limit.limit - granted[i]!),
    reset: resetSeconds(now.getTime(), limit.windowSeconds),
  }));
  const nearest = chain.findLast((link) => link.policy.credits !== undefined);
  if (!nearest) return { ratelimits, credits: null };
  const credits = nearest.policy.credits!;
  const balance = (await balanceList(ctx.db, [nearest.holder])).get(nearest.holder);
  const view = creditsView(liveRemaining(balance, credits, now), credits, now);
  return { ratelimits, credits: { scope: nearest.scope, ...view } };
}
