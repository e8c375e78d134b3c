import type { PolicyLevel } from "../policy.ts";
import { resetSeconds } from "./window.ts";

// One request against every rate limit that counts it, on every level from the customer down to the
// key (docs/api.md, "Key policy"): admitted by all of them or by none, so a refusal charges nothing
// anywhere. A cost of 0 is refused where a cost of 1 would be, a full window, and charges nothing.

/** A limit that counts the request, and how much of its current window is spent. */
export interface LimitUse {
  name: string;
  scope: PolicyLevel;
  /** For a key's limit (its own or an ancestor's): the numeric id of the key whose policy it is. */
  id?: number | undefined;
  limit: number;
  windowSeconds: number;
  /** The costs admitted in the current window so far. */
  used: number;
}

/** A `ratelimits` entry of a verdict. */
export interface RateLimitReport {
  name: string;
  scope: PolicyLevel;
  /** For a key's limit: the numeric id of the key whose policy it is (docs/api.md, "Restricted keys"). */
  id?: number;
  limit: number;
  /** What the window has left: after this request's cost when admitted, as it was when refused. */
  remaining: number;
  /** Whole seconds until the window ends, at least 1. */
  reset: number;
  /** This limit is one that refused the request. */
  exceeded: boolean;
}

export interface RateLimitVerdict {
  admitted: boolean;
  ratelimits: RateLimitReport[];
  /** The limit with the least remaining, for the RateLimit and RateLimit-Policy headers; none without limits. */
  tightest: { report: RateLimitReport; windowSeconds: number } | undefined;
  /** When refused: seconds until every window that refused it has ended (Retry-After). */
  retryAfter: number | undefined;
}

export function judgeRateLimits(uses: readonly LimitUse[], cost: number, nowMs: number): RateLimitVerdict {
  const needed = cost >= 1 ? cost : 1;
  const exceeded = uses.map((u) => u.used + needed > u.limit);
  const admitted = !exceeded.includes(true);
  const charge = admitted ? cost : 0;
  let tightest: RateLimitVerdict["tightest"];
  let retryAfter: number | undefined;
  const ratelimits = uses.map((u, i): RateLimitReport => {
    const report: RateLimitReport = {
      name: u.name,
      scope: u.scope,
      ...(u.id !== undefined && { id: u.id }),
      limit: u.limit,
      // A limit lowered below what its window already spent has nothing left, not less than nothing.
      remaining: Math.max(0, u.limit - u.used - charge),
      reset: resetSeconds(nowMs, u.windowSeconds),
      exceeded: exceeded[i]!,
    };
    if (tightest === undefined || report.remaining < tightest.report.remaining) tightest = { report, windowSeconds: u.windowSeconds };
    if (report.exceeded) retryAfter = Math.max(retryAfter ?? 0, report.reset);
    return report;
  });
  return { admitted, ratelimits, tightest, retryAfter };
}
