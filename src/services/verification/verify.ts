import { mayReach } from "../../domain/scope/access.ts";
import { VERDICT_OUTCOMES } from "../../domain/analytics/usage.ts";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import { pathTargets, type PlatformTarget } from "../../domain/scope/platform-path.ts";
import type { RequestFacts } from "../../domain/policy/restrictions/request-facts.ts";
import type { RestrictionReason } from "../../domain/policy/restrictions/restrictions.ts";
import { levelOf, scopeOf, type Level, type Scope } from "../../domain/scope/scope.ts";
import { recordAuthentication } from "./auth-outcome.ts";
import { usableKey } from "./authenticate.ts";
import type { VerificationNeeds } from "./needs.ts";
import { after, type Maybe } from "../maybe.ts";
import { countersOf, factsOf, meteredVerdict, meters, restrictionOf, unchargedReport, type PolicyReport } from "../policy/policy-check.ts";
import { UNBOUND, type PolicyChain } from "../policy/policy-chain.ts";

// Verification for the rest of the platform (docs/api.md, "Verification"): may this token do this
// method on this path? One answer for POST /verify and /auth, its checks in order: the token, the level
// rules of domain/scope/access.ts, then the key's policy (docs/api.md, "Key policy"): restrictions, rate
// limits, credits. A key that no policy binds stops after the level rules, as it always did.
export const VERDICT_CODES = ["VALID", "MALFORMED", "UNKNOWN", "DISABLED", "EXPIRED", "FORBIDDEN", "RESTRICTED", "RATE_LIMITED", "USAGE_EXCEEDED"] as const;
type VerdictCode = (typeof VERDICT_CODES)[number];
type KeyedCode = Extract<VerdictCode, "VALID" | "FORBIDDEN" | "RESTRICTED" | "RATE_LIMITED" | "USAGE_EXCEEDED">;

export type Verdict =
  | { code: KeyedCode; key: StoredKey; level: Level; reason?: RestrictionReason; policy?: PolicyReport }
  | { code: Exclude<VerdictCode, KeyedCode> };

export interface VerifyRequest {
  endpoint: "verify" | "auth";
  /** Who asks (http/verification/client-address.ts): failures are counted against it. */
  client: string;
  token: string;
  /** The original request's method, upper-case. */
  method: string;
  /** The original request's path (a query is ignored); undefined: no path to check. */
  path: string | undefined;
  /** The original client's address, for a policy's `ips`; undefined when not given (a /verify without `ip`). */
  ip: string | undefined;
  referrer: string | undefined;
  /** What the request costs its limits and credits (1 on /auth). */
  cost: number;
}

/**
 * The verdict on a request, at once when the caches know it and this process holds what its limits
 * and credits need; throws Throttled (429) for a throttled client whose token is not known valid, and
 * StoreUnavailable (503) when the database is needed and cannot be reached.
 */
export function verifyRequest(ctx: VerificationNeeds, req: VerifyRequest): Maybe<Verdict> {
  return after(usableKey(ctx, req.endpoint, req.client, req.token), (key) => {
    if (typeof key === "string") return { code: key.toUpperCase() as Uppercase<typeof key> };
    return after(req.path === undefined || mayReachPath(ctx, key, req.method, req.path), (reaches) => {
      const chain = ctx.policies.chainOf(key);
      const verdict = chain instanceof Promise ? chain.then((c) => decide(ctx, key, c, req, reaches)) : decide(ctx, key, chain, req, reaches);
      if (ctx.analytics === undefined) return verdict;
      return verdict instanceof Promise ? verdict.then((v) => counted(ctx, v, req.cost)) : counted(ctx, verdict, req.cost);
    });
  });
}

/**
 * Usage analytics count every verdict on a known key here (docs/analytics.md), DISABLED and EXPIRED
 * where the token is judged (authenticate.ts); the credits a VALID one spent where a balance binds the key.
 */
function counted(ctx: VerificationNeeds, verdict: Verdict, cost: number): Verdict {
  if ("key" in verdict) {
    ctx.analytics?.count(verdict.key.lineage, VERDICT_OUTCOMES[verdict.code]!, verdict.code === "VALID" && verdict.policy?.credits ? cost : 0);
  }
  return verdict;
}

function decide(ctx: VerificationNeeds, key: StoredKey, chain: PolicyChain, req: VerifyRequest, reaches: boolean): Maybe<Verdict> {
  recordAuthentication(ctx, req.endpoint, req.client, reaches ? "valid" : "forbidden");
  if (chain === UNBOUND) return { code: reaches ? "VALID" : "FORBIDDEN", key, level: levelOf(key) };
  return judgePolicy(ctx, key, chain, req, reaches);
}

function judgePolicy(ctx: VerificationNeeds, key: StoredKey, chain: PolicyChain, req: VerifyRequest, reaches: boolean): Maybe<Verdict> {
  const level = levelOf(key);
  let facts: RequestFacts | undefined;
  const factsOnce = () => (facts ??= factsOf(req));
  const reason = reaches ? restrictionOf(chain, factsOnce) : undefined;
  const decided = !reaches ? "forbidden" : reason ? "restricted" : undefined;
  if (decided !== undefined) {
    if (reason) ctx.metrics?.policyDecision("restricted");
    const refused = { code: reason ? "RESTRICTED" : "FORBIDDEN", key, level, ...(reason && { reason }) } as const;
    // Only POST /verify's answer says what the limits and credits have left; /auth's 401 and 403 do not.
    if (req.endpoint !== "verify" || !meters(chain)) return refused;
    return after(ctx.meter.read(countersOf(chain, factsOnce), req.cost), (outcome) => ({ ...refused, policy: unchargedReport(chain, outcome, ctx.clock()) }));
  }
  if (!meters(chain)) {
    ctx.metrics?.policyDecision("admitted");
    return { code: "VALID", key, level };
  }
  const outcome = ctx.meter.charge(countersOf(chain, factsOnce), req.cost);
  const verdict = (o: Exclude<typeof outcome, Promise<unknown>>): Verdict => {
    const { code, report } = meteredVerdict(chain, o, req.cost, ctx.clock());
    ctx.metrics?.policyDecision(code === "VALID" ? "admitted" : code === "RATE_LIMITED" ? "rate_limited" : "usage_exceeded");
    return { code, key, level, policy: report };
  };
  if (!(outcome instanceof Promise)) return verdict(outcome);
  return outcome.then(verdict, (error: unknown) => {
    if (error instanceof StoreUnavailable) ctx.metrics?.policyDecision("unavailable");
    throw error;
  });
}

function mayReachPath(ctx: VerificationNeeds, key: StoredKey, method: string, path: string): Maybe<boolean> {
  return ctx.pathScopes.reaches(key, method, path, () => judgePath(ctx, key, method, path));
}

function judgePath(ctx: VerificationNeeds, key: StoredKey, method: string, path: string): Maybe<boolean> {
  const targets = pathTargets(path);
  if (!targets) return false;
  const caller = scopeOf(key);
  // Upstreams read some spellings differently (domain/scope/platform-path.ts): the key must reach what each reading names.
  const reachesFrom = (i: number): Maybe<boolean> =>
    i === targets.length || after(reachesTarget(ctx, caller, method, targets[i]!), (reaches) => reaches && reachesFrom(i + 1));
  return reachesFrom(0);
}

function reachesTarget(ctx: VerificationNeeds, caller: Scope, method: string, { refs, atApplication }: PlatformTarget): Maybe<boolean> {
  if (Object.keys(refs).length === 0) return mayReach(caller, undefined, method, atApplication);
  return after(ctx.pathScopes.resolve(ctx, refs, caller), (named) => named !== undefined && mayReach(caller, named, method, atApplication));
}
