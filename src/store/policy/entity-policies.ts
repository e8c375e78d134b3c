import type { Policy } from "../../domain/policy/policy.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Queryable } from "../database.ts";

// The policies of the entities a key lies in (docs/api.md, "Key policy"), read afresh in one statement:
// a key's cached copy carries them as they were when it was read, and an entity's change is announced
// only as "the directory changed" (migrations/0004).

export interface EntityPolicies {
  customer: Policy | null;
  domain: Policy | null;
  application: Policy | null;
  subscriber: Policy | null;
}

const ENTITY_POLICIES = `
  SELECT (SELECT policy FROM customers WHERE id = $1) AS customer, (SELECT policy FROM domains WHERE id = $2) AS domain,
         (SELECT policy FROM applications WHERE id = $3) AS application, (SELECT policy FROM subscribers WHERE id = $4) AS subscriber`;

export async function entityPoliciesFind(q: Queryable, scope: Scope): Promise<EntityPolicies> {
  const [row] = await q.query<{ [K in keyof EntityPolicies]: Policy | null }>(ENTITY_POLICIES, [scope.tenantId, scope.domainId, scope.applicationId, scope.subscriberId]);
  return { customer: row?.customer ?? null, domain: row?.domain ?? null, application: row?.application ?? null, subscriber: row?.subscriber ?? null };
}
