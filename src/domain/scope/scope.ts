// scope/ of domain/: scopes and "may manage", what a platform path names and its keywords' canonical form,
// how a path segment names an entity. It uses nothing outside domain/'s top files.
//
// A key's scope: a customer, optionally narrowed to a domain, and within a domain to one voice
// application or one subscriber. Scopes nest; "inside" is the whole authorization model.
export interface Scope {
  readonly tenantId: number;
  readonly domainId: number | null;
  readonly applicationId: number | null;
  readonly subscriberId: number | null;
}

/**
 * A scope named by references, outermost first: path segments (`/customers/{customer}/domains/...`)
 * or an ApiKey's spec. Each entity by id, uuid or name (and `self` on key paths).
 */
export interface ScopeRefs {
  customer?: string | undefined;
  domain?: string | undefined;
  application?: string | undefined;
  subscriber?: string | undefined;
}

/** The four levels, outermost first: a scope's, and the entities a ScopeRefs names. */
export const LEVELS = ["customer", "domain", "application", "subscriber"] as const;
export type Level = (typeof LEVELS)[number];

export function levelOf(scope: Scope): Level {
  if (scope.applicationId !== null) return "application";
  if (scope.subscriberId !== null) return "subscriber";
  if (scope.domainId !== null) return "domain";
  return "customer";
}

export function customerScope(tenantId: number): Scope {
  return { tenantId, domainId: null, applicationId: null, subscriberId: null };
}

export function domainScope(tenantId: number, domainId: number): Scope {
  return { tenantId, domainId, applicationId: null, subscriberId: null };
}

export function applicationScope(tenantId: number, domainId: number, applicationId: number): Scope {
  return { tenantId, domainId, applicationId, subscriberId: null };
}

export function subscriberScope(tenantId: number, domainId: number, subscriberId: number): Scope {
  return { tenantId, domainId, applicationId: null, subscriberId };
}

/** The scope of anything that carries one (a key, a principal): just its four ids. */
export function scopeOf(x: Scope): Scope {
  return { tenantId: x.tenantId, domainId: x.domainId, applicationId: x.applicationId, subscriberId: x.subscriberId };
}

export function sameScope(a: Scope, b: Scope): boolean {
  return a.tenantId === b.tenantId && a.domainId === b.domainId && a.applicationId === b.applicationId && a.subscriberId === b.subscriberId;
}

/**
 * May a key of scope `caller` manage what lies at scope `target`? Exactly when `target` lies inside
 * `caller`: every part the caller is narrowed to, the target shares.
 */
export function mayManage(caller: Scope, target: Scope): boolean {
  return (
    caller.tenantId === target.tenantId &&
    (caller.domainId === null || caller.domainId === target.domainId) &&
    (caller.applicationId === null || caller.applicationId === target.applicationId) &&
    (caller.subscriberId === null || caller.subscriberId === target.subscriberId)
  );
}
