// restrictions/ of domain/policy/: from where a key may be used (addresses, referrers, methods, paths),
// and the facts of a request they judge. It may use policy/'s own files and scope/.

import { cidrContains, parseCidr, type Cidr } from "./cidr.ts";
import { compileEntries, compileMethods } from "../entries.ts";
import { matchesAnyPath, parsePathGlob, type PathGlob } from "./glob-path.ts";
import type { Parsed, Restrictions } from "../policy.ts";
import { matchesReferrer, parseReferrerPattern, parseStoredReferrerPattern, readReferrer, type ReferrerPattern } from "./referrer.ts";
import type { RequestFacts } from "./request-facts.ts";

// A policy's restrictions (docs/api.md, "Key policy"): a request passes when it matches every kind
// given, each by one of its entries. The kinds are judged in the documented order, and the first that
// refuses is the reason a verdict gives.

export type RestrictionReason = "ip" | "referrer" | "method" | "path";

export interface CompiledRestrictions {
  ips?: readonly Cidr[];
  referrers?: readonly ReferrerPattern[];
  methods?: ReadonlySet<string>;
  paths?: readonly PathGlob[];
}

/**
 * Every entry parsed once; a reason names the first bad one (`restrictions.ips[2]: ...`). A policy
 * already stored (`stored`) may hold referrer patterns of looser rules than today's: each matches
 * nothing (referrer.ts), rather than the policy failing to compile and binding nothing at all.
 */
export function compileRestrictions(restrictions: Restrictions, stored = false): Parsed<CompiledRestrictions> {
  const compiled: CompiledRestrictions = {};
  const { ips, referrers, methods, paths } = restrictions;
  if (ips !== undefined) {
    const parsed = compileEntries("restrictions.ips", ips, parseCidr);
    if (!parsed.ok) return parsed;
    compiled.ips = parsed.value;
  }
  if (referrers !== undefined) {
    const parsed = compileEntries("restrictions.referrers", referrers, stored ? parseStoredReferrerPattern : parseReferrerPattern);
    if (!parsed.ok) return parsed;
    compiled.referrers = parsed.value;
  }
  if (methods !== undefined) {
    const parsed = compileMethods("restrictions.methods", methods);
    if (!parsed.ok) return parsed;
    compiled.methods = parsed.value;
  }
  if (paths !== undefined) {
    const parsed = compileEntries("restrictions.paths", paths, parsePathGlob);
    if (!parsed.ok) return parsed;
    compiled.paths = parsed.value;
  }
  return { ok: true, value: compiled };
}

/** Why the restrictions refuse the request, or undefined when it passes. A missing input refuses. */
export function restrictionRefusal(restrictions: CompiledRestrictions, request: RequestFacts): RestrictionReason | undefined {
  const { ips, referrers, methods, paths } = restrictions;
  const { address, referrer, method, paths: readings } = request;
  if (ips && !(address && ips.some((cidr) => cidrContains(cidr, address)))) return "ip";
  if (referrers && !referrerMatches(referrers, referrer)) return "referrer";
  if (methods && !(method !== undefined && methods.has(method))) return "method";
  if (paths && !(readings && readings.length > 0 && readings.every((reading) => matchesAnyPath(paths, reading)))) return "path";
  return undefined;
}

function referrerMatches(patterns: readonly ReferrerPattern[], text: string | undefined): boolean {
  const referrer = text === undefined ? undefined : readReferrer(text);
  return referrer !== undefined && patterns.some((pattern) => matchesReferrer(pattern, referrer));
}
