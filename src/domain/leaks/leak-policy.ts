import type { LeakPolicy, Policy } from "../policy/policy.ts";

// Which leak policy acts on a key reported leaked (docs/leaks.md): the nearest one set, from the key's
// own up through its subscriber or application, domain and customer, else the service's default. Unlike
// restrictions, limits and credits, nothing above can forbid what is nearer: a leak policy says how a
// key's owner wants to be told and protected, and the owner nearest the key knows its use best.

/** `policies` nearest first: the key's own, then its entities' upwards; null where none is set. */
export function leakPolicyOf(policies: readonly (Policy | null | undefined)[], fallback: LeakPolicy): LeakPolicy {
  for (const policy of policies) if (policy?.leakPolicy !== undefined) return policy.leakPolicy;
  return fallback;
}
