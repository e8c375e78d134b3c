import { integerProblem } from "./entries.ts";
import { CREDITS_REMAINING, LEAK_POLICIES, REFILL_AMOUNT, REFILL_DAY, type Credits, type Parsed, type Policy } from "./policy.ts";
import { compileRateLimits, type CompiledRateLimit } from "./limits/ratelimits.ts";
import { compileRestrictions, type CompiledRestrictions } from "./restrictions/restrictions.ts";

// A policy checked and parsed once, when it is set or loaded, so that judging a request parses nothing.
// A reason names the field at fault from the policy's root (`restrictions.ips[2]: ...`), for a 400.

export interface CompiledPolicy {
  restrictions?: CompiledRestrictions;
  ratelimits?: readonly CompiledRateLimit[];
  credits?: Credits;
}

/**
 * `stored`: the policy was read from the database, where an older release may have written it under
 * looser rules (restrictions.ts says what is then taken instead of refused); a policy being set is
 * held to today's.
 */
export function compilePolicy(policy: Policy, { stored = false }: { stored?: boolean } = {}): Parsed<CompiledPolicy> {
  const compiled: CompiledPolicy = {};
  if (policy.restrictions !== undefined) {
    const parsed = compileRestrictions(policy.restrictions, stored);
    if (!parsed.ok) return parsed;
    compiled.restrictions = parsed.value;
  }
  if (policy.ratelimits !== undefined) {
    const parsed = compileRateLimits(policy.ratelimits);
    if (!parsed.ok) return parsed;
    compiled.ratelimits = parsed.value;
  }
  if (policy.credits !== undefined) {
    const problem = creditsProblem(policy.credits);
    if (problem !== undefined) return { ok: false, reason: problem };
    compiled.credits = policy.credits;
  }
  // Checked here, never compiled: a leak report reads it from the stored policy, a verification never does.
  if (policy.leakPolicy !== undefined && !(LEAK_POLICIES as readonly unknown[]).includes(policy.leakPolicy)) {
    return { ok: false, reason: `leakPolicy: must be one of ${LEAK_POLICIES.map((p) => `"${p}"`).join(", ")}` };
  }
  return { ok: true, value: compiled };
}

function creditsProblem({ remaining, refill }: Credits): string | undefined {
  const problem = integerProblem("credits.remaining", remaining, CREDITS_REMAINING);
  if (problem !== undefined || refill === undefined) return problem;
  if (refill.interval !== "daily" && refill.interval !== "monthly") return `credits.refill.interval: must be "daily" or "monthly"`;
  return integerProblem("credits.refill.amount", refill.amount, REFILL_AMOUNT) ?? (refill.day === undefined ? undefined : integerProblem("credits.refill.day", refill.day, REFILL_DAY));
}
