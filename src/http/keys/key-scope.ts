import type { Request } from "express";
import { forbidden, unauthorized } from "../../domain/errors.ts";
import type { Reach } from "../../domain/keys/lineage.ts";
import { mayReach } from "../../domain/scope/access.ts";
import type { Scope, ScopeRefs } from "../../domain/scope/scope.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";

/**
 * Load and authorize: the scope a request on a key path works in, its path's target, once the caller
 * is known to reach the path's gate. Anything else, an unknown entity in the path included, is 401.
 * Names are read afresh, and stand as last read while the database cannot be reached (PathScopeCache).
 * (Every key handler reads: authenticate and validate (route.ts), load and authorize (this), act (a
 * service, which sees only keys inside the scope), respond.)
 */
export async function authorizedScope(ctx: Pick<VerificationNeeds, "db" | "pathScopes">, req: Request): Promise<Reach> {
  return { ...(await authorizedTarget(ctx, req)), caller: req.principal!.caller };
}

/** The calling key's own scope, and the key itself: what /keys and /keys/self work in. */
export function callerReach(req: Request): Reach {
  const { scope, caller } = req.principal!;
  return { ...scope, caller };
}

async function authorizedTarget(ctx: Pick<VerificationNeeds, "db" | "pathScopes">, req: Request): Promise<Scope> {
  const caller = req.principal!.scope;
  if (!("customer" in req.params || "domain" in req.params || "application" in req.params || "subscriber" in req.params)) {
    return caller;
  }
  const resolved = await ctx.pathScopes.resolveAfresh(ctx, req.params as ScopeRefs, caller);
  // The level rules every platform path follows (domain/scope/access.ts); a key path never ends at an application.
  if (!resolved || !mayReach(caller, resolved, req.method, false)) throw unauthorized("This key may not manage keys here.");
  return resolved.target;
}

/**
 * A restricted key (docs/api.md, "Restricted keys") may not use a path about more than itself and its
 * descendants (webhooks, entities' policies and credits): 403.
 */
export function refuseRestricted(req: Request, what: string): void {
  if (req.principal?.caller.restricted) throw forbidden(`A restricted key (its own or an ancestor's policy binds it) may not use ${what}.`);
}

/**
 * The `{key-id}` of a path: a keyId, a numeric id, or `self` for the calling key (docs/api.md, "Keys").
 * `self` becomes the caller's numeric id, so the service treats it as any other key: found only
 * inside the path's scope, else 404 (and DELETE deletes nothing), like a key outside it.
 */
export function keyRef(req: Request): string {
  const ref = String(req.params.keyId);
  return ref === "self" ? String(req.principal!.key.id) : ref;
}
