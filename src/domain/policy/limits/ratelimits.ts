// limits/ of domain/policy/: how fast and how much: rate limits and their windows, credits and their
// refills, and the verdicts of each. It may use policy/'s own files, restrictions/ and scope/.

import { compileEntries, compileMethods, integerProblem } from "../entries.ts";
import { foldedPathGlob, matchesAnyPath, parsePathGlob, type PathGlob } from "../restrictions/glob-path.ts";
import { RATELIMIT_LIMIT, RATELIMIT_NAME, RATELIMITS_MAX, WINDOW_SECONDS, type Parsed, type RateLimit } from "../policy.ts";
import type { RequestFacts } from "../restrictions/request-facts.ts";

// A policy's rate limits (docs/api.md, "Key policy"): each counts the requests its `methods` and
// `paths` choose, every request when it has neither.

export interface CompiledRateLimit {
  name: string;
  limit: number;
  windowSeconds: number;
  methods?: ReadonlySet<string>;
  /** In ASCII lower case (glob-path.ts's foldedPathGlob): a limit ignores letter case. */
  paths?: readonly PathGlob[];
}

/** Every limit checked and its filters parsed once; a reason names the first bad field (`ratelimits[1].name: ...`). */
export function compileRateLimits(limits: readonly RateLimit[]): Parsed<CompiledRateLimit[]> {
  if (limits.length > RATELIMITS_MAX) return { ok: false, reason: `ratelimits: must have at most ${RATELIMITS_MAX} entries` };
  const compiled: CompiledRateLimit[] = [];
  const names = new Set<string>();
  for (const [i, { name, limit, windowSeconds, methods, paths }] of limits.entries()) {
    if (!RATELIMIT_NAME.test(name)) return { ok: false, reason: `ratelimits[${i}].name: must be 1 to 64 of A-Z, a-z, 0-9, ".", "_", "-"` };
    if (names.has(name)) return { ok: false, reason: `ratelimits[${i}].name: "${name}" is already the name of another limit of this policy` };
    names.add(name);
    const problem = integerProblem(`ratelimits[${i}].limit`, limit, RATELIMIT_LIMIT) ?? integerProblem(`ratelimits[${i}].windowSeconds`, windowSeconds, WINDOW_SECONDS);
    if (problem !== undefined) return { ok: false, reason: problem };
    const entry: CompiledRateLimit = { name, limit, windowSeconds };
    if (methods !== undefined) {
      const parsed = compileMethods(`ratelimits[${i}].methods`, methods);
      if (!parsed.ok) return parsed;
      entry.methods = parsed.value;
    }
    if (paths !== undefined) {
      const parsed = compileEntries(`ratelimits[${i}].paths`, paths, parsePathGlob);
      if (!parsed.ok) return parsed;
      entry.paths = parsed.value.map(foldedPathGlob);
    }
    compiled.push(entry);
  }
  return { ok: true, value: compiled };
}

/**
 * Whether the limit counts the request: when any reading of its path matches, ignoring ASCII letter
 * case, as an upstream may take that one and route without regard to case. A request that does not say
 * what a filter asks (a /verify without `path`) is counted: leaving a field out must not be a way
 * around a limit.
 */
export function countsRequest(limit: CompiledRateLimit, request: RequestFacts): boolean {
  const { methods, paths } = limit;
  const { method, foldedPaths: readings } = request;
  if (methods && method !== undefined && !methods.has(method)) return false;
  if (paths && readings !== undefined && readings.length > 0 && !readings.some((reading) => matchesAnyPath(paths, reading))) return false;
  return true;
}
