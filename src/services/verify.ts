import { mayReach } from "../domain/access.ts";
import type { StoredKey } from "../domain/model.ts";
import { pathTargets, type PlatformTarget } from "../domain/platform-path.ts";
import { levelOf, scopeOf, type Level, type Scope } from "../domain/scope.ts";
import { recordAuthentication } from "./auth-outcome.ts";
import { usableKey } from "./authenticate.ts";
import type { Context } from "./context.ts";
import { after, type Maybe } from "./maybe.ts";

// Verification for the rest of the platform (docs/api.md, "Verification"): may this token do this
// method on this path? One answer for POST /verify and /auth, by the level rules of domain/access.ts.
export const VERDICT_CODES = ["VALID", "MALFORMED", "UNKNOWN", "DISABLED", "EXPIRED", "FORBIDDEN"] as const;
type VerdictCode = (typeof VERDICT_CODES)[number];

export type Verdict =
  | { code: Extract<VerdictCode, "VALID" | "FORBIDDEN">; key: StoredKey; level: Level }
  | { code: Exclude<VerdictCode, "VALID" | "FORBIDDEN"> };

export interface VerifyRequest {
  endpoint: "verify" | "auth";
  /** Who asks (http/client-address.ts): failures are counted against it. */
  client: string;
  token: string;
  /** The original request's method, upper-case. */
  method: string;
  /** The original request's path (a query is ignored); undefined: no path to check. */
  path: string | undefined;
}

/**
 * The verdict on a request, at once when the caches know it; throws Throttled (429) for a throttled
 * client whose token is not known valid.
 */
export function verifyRequest(ctx: Context, req: VerifyRequest): Maybe<Verdict> {
  return after(usableKey(ctx, req.endpoint, req.client, req.token), (key) => {
    if (typeof key === "string") return { code: key.toUpperCase() as Uppercase<typeof key> };
    return after(req.path === undefined || mayReachPath(ctx, key, req.method, req.path), (reaches): Verdict => {
      recordAuthentication(ctx, req.endpoint, req.client, reaches ? "valid" : "forbidden");
      return { code: reaches ? "VALID" : "FORBIDDEN", key, level: levelOf(key) };
    });
  });
}

function mayReachPath(ctx: Context, key: StoredKey, method: string, path: string): Maybe<boolean> {
  return ctx.pathScopes.reaches(key, method, path, () => judgePath(ctx, key, method, path));
}

function judgePath(ctx: Context, key: StoredKey, method: string, path: string): Maybe<boolean> {
  const targets = pathTargets(path);
  if (!targets) return false;
  const caller = scopeOf(key);
  // Upstreams read some spellings differently (domain/platform-path.ts): the key must reach what each reading names.
  const reachesFrom = (i: number): Maybe<boolean> =>
    i === targets.length || after(reachesTarget(ctx, caller, method, targets[i]!), (reaches) => reaches && reachesFrom(i + 1));
  return reachesFrom(0);
}

function reachesTarget(ctx: Context, caller: Scope, method: string, { refs, atApplication }: PlatformTarget): Maybe<boolean> {
  if (Object.keys(refs).length === 0) return mayReach(caller, undefined, method, atApplication);
  return after(ctx.pathScopes.resolve(ctx, refs, caller), (named) => named !== undefined && mayReach(caller, named, method, atApplication));
}
