// A key's scope: a customer, optionally narrowed to a domain, and within a domain to one voice
// application or one subscriber. Scopes nest; "inside" is the whole authorization model.
export interface Scope {
  readonly tenantId: number;
  readonly domainId: number | null;
  readonly applicationId: number | null;
  readonly subscriberId: number | null;
}

export type Level = "customer" | "domain" | "application" | "subscriber";

export function levelOf(scope: Scope): Level {
  if (scope.applicationId !== null) return "application";
  if (scope.subscriberId !== null) return "subscriber";
  if (scope.domainId !== null) return "domain";
  return "customer";
}

export function tenantScope(tenantId: number): Scope {
  return { tenantId, domainId: null, applicationId: null, subscriberId: null };
}

export function domainScope(tenantId: number, domainId: number): Scope {
  return { tenantId, domainId, applicationId: null, subscriberId: null };
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
