import { judgeCredits, type Balance } from "../../domain/policy/limits/credits-verdict.ts";
import { judgeRateLimits, type LimitUse, type RateLimitReport, type RateLimitVerdict } from "../../domain/policy/limits/ratelimit-verdict.ts";
import { countsRequest, type CompiledRateLimit } from "../../domain/policy/limits/ratelimits.ts";
import { requestFacts, type RequestFacts } from "../../domain/policy/restrictions/request-facts.ts";
import { restrictionRefusal, type RestrictionReason } from "../../domain/policy/restrictions/restrictions.ts";
import { pathReadings } from "../../domain/scope/platform-path.ts";
import type { PolicyChain } from "./policy-chain.ts";
import type { CounterSpec, MeterOutcome } from "./policy-meter.ts";

// Steps 3 to 5 of a verification (docs/api.md, "Key policy"): restrictions, then rate limits, then
// credits, each by every level of the key's chain. The pure judgements are domain/policy's; this joins
// them to the key's chain and to what the meter (policy-meter.ts) could admit.

/** What a request is judged on, as its endpoint reads it. */
export interface PolicyRequest {
  /** The client's address, for `ips`. */
  ip: string | undefined;
  referrer: string | undefined;
  method: string | undefined;
  path: string | undefined;
}

/** What a chain asks of a request, worked out once per chain. */
interface Prepared {
  restricted: boolean;
  /** Whether judging needs the request's facts (restrictions, or limits that choose requests). */
  facts: boolean;
  limits: { spec: CounterSpec; limit: CompiledRateLimit }[];
  balances: CounterSpec[];
  /** Every counter, for a request the limits' filters need not judge. */
  all: CounterSpec[];
}

const prepared = new WeakMap<PolicyChain, Prepared>();

function prepare(chain: PolicyChain): Prepared {
  let p = prepared.get(chain);
  if (p !== undefined) return p;
  p = { restricted: false, facts: false, limits: [], balances: [], all: [] };
  for (const { scope, holder, id, policy } of chain) {
    if (policy.restrictions) p.restricted = p.facts = true;
    for (const limit of policy.ratelimits ?? []) {
      if (limit.methods || limit.paths) p.facts = true;
      p.limits.push({ spec: { kind: "window", holder, scope, id, name: limit.name, limit: limit.limit, windowSeconds: limit.windowSeconds }, limit });
    }
    if (policy.credits) p.balances.push({ kind: "balance", holder, scope, credits: policy.credits });
  }
  p.all = [...p.limits.map((l) => l.spec), ...p.balances];
  prepared.set(chain, p);
  return p;
}

export function factsOf(request: PolicyRequest): RequestFacts {
  return requestFacts({ ip: request.ip, referrer: request.referrer, method: request.method, paths: request.path === undefined ? undefined : pathReadings(request.path) });
}

/** Whether the chain counts anything: limits or credits. */
export function meters(chain: PolicyChain): boolean {
  const p = prepare(chain);
  return p.limits.length > 0 || p.balances.length > 0;
}

/** The first restriction, outermost level first, that refuses the request; undefined when none does. */
export function restrictionOf(chain: PolicyChain, facts: () => RequestFacts): RestrictionReason | undefined {
  if (!prepare(chain).restricted) return undefined;
  const f = facts();
  for (const { policy } of chain) {
    const reason = policy.restrictions && restrictionRefusal(policy.restrictions, f);
    if (reason) return reason;
  }
  return undefined;
}

/** The counters that count the request: its limits whose filters choose it, and every balance. */
export function countersOf(chain: PolicyChain, facts: () => RequestFacts): CounterSpec[] {
  const p = prepare(chain);
  if (!p.facts) return p.all;
  const f = facts();
  const specs: CounterSpec[] = [];
  for (const { spec, limit } of p.limits) if (countsRequest(limit, f)) specs.push(spec);
  return specs.concat(p.balances);
}

/** What a verdict says of a key's limits and credits. */
export interface PolicyReport {
  /** The limits that counted the request; present when the key has limits. */
  ratelimits?: RateLimitReport[];
  /** The nearest balance, after the charge; present when the key has credits. */
  credits?: { remaining: number };
  /** The limit with the least remaining, for /auth's RateLimit fields. */
  tightest?: RateLimitVerdict["tightest"];
  /** Seconds until a refused request may pass: its window's end, or the refill (none when a balance never refills). */
  retryAfter?: number | undefined;
}

export type MeteredCode = "VALID" | "RATE_LIMITED" | "USAGE_EXCEEDED";

/** The verdict on what the meter found: rate limits refuse first, then credits; a refusal charged nothing. */
export function meteredVerdict(chain: PolicyChain, outcome: MeterOutcome, cost: number, now: Date): { code: MeteredCode; report: PolicyReport } {
  const uses: LimitUse[] = [];
  const balances: Balance[] = [];
  for (const { spec, available } of outcome.readings) {
    if (spec.kind === "window") uses.push({ name: spec.name, scope: spec.scope, id: spec.id, limit: spec.limit, windowSeconds: spec.windowSeconds, used: Math.max(0, spec.limit - available) });
    else balances.push({ scope: spec.scope, remaining: available, refill: spec.credits.refill });
  }
  const nowMs = now.getTime();
  let limits = judgeRateLimits(uses, cost, nowMs);
  // A request refused for its credits is charged to no limit either: their figures are without it.
  if (limits.admitted && !outcome.admitted) limits = judgeRateLimits(uses, 0, nowMs);
  const credits = judgeCredits(balances, limits.admitted ? cost : 0, now);
  const code: MeteredCode = !limits.admitted ? "RATE_LIMITED" : !credits.admitted ? "USAGE_EXCEEDED" : "VALID";
  const report = reportOf(chain, limits, credits.remaining);
  if (code === "RATE_LIMITED") report.retryAfter = limits.retryAfter;
  if (code === "USAGE_EXCEEDED") report.retryAfter = credits.retryAfter;
  return { code, report };
}

function reportOf(chain: PolicyChain, limits: RateLimitVerdict, remaining: number | undefined): PolicyReport {
  const p = prepare(chain);
  const report: PolicyReport = {};
  if (p.limits.length > 0) {
    report.ratelimits = limits.ratelimits;
    report.tightest = limits.tightest;
  }
  if (p.balances.length > 0 && remaining !== undefined) report.credits = { remaining };
  return report;
}

/** The figures of a request refused before its limits and credits (FORBIDDEN, RESTRICTED): nothing charged. */
export function unchargedReport(chain: PolicyChain, outcome: MeterOutcome, now: Date): PolicyReport {
  const { report } = meteredVerdict(chain, { admitted: false, readings: outcome.readings }, 0, now);
  // No limit refused it, full or not.
  report.ratelimits = report.ratelimits?.map((r) => ({ ...r, exceeded: false }));
  if (report.ratelimits === undefined) delete report.ratelimits;
  delete report.retryAfter;
  return report;
}
