import { parseNamed } from "../../domain/scope/identifier.ts";
import { applicationScope, customerScope, domainScope, subscriberScope, type Level, type Scope, type ScopeRefs } from "../../domain/scope/scope.ts";
import { entityFind, TABLES } from "../../store/directory/directory.ts";
import type { DirectoryNeeds } from "./needs.ts";
import { findSubscriber } from "./directory.ts";

export type NamedScope =
  | { found: true; scope: Scope }
  | { found: false; missing: Level; ref: string };

/**
 * Resolves the entities of `refs`, each within the one above it (application and subscriber within the
 * domain), to a scope; else names the first entity that is unknown.
 */
export async function resolveNamedScope(ctx: DirectoryNeeds, refs: ScopeRefs & { customer: string }): Promise<NamedScope> {
  const customer = await entityFind(ctx.db, TABLES.customers, parseNamed(refs.customer), null);
  if (!customer) return { found: false, missing: "customer", ref: refs.customer };
  if (refs.domain === undefined) return { found: true, scope: customerScope(customer.id) };

  const domain = await entityFind(ctx.db, TABLES.domains, parseNamed(refs.domain), customer.id);
  if (!domain) return { found: false, missing: "domain", ref: refs.domain };
  if (refs.application !== undefined) {
    const app = await entityFind(ctx.db, TABLES.applications, parseNamed(refs.application), domain.id);
    if (!app) return { found: false, missing: "application", ref: refs.application };
    return { found: true, scope: applicationScope(customer.id, domain.id, app.id) };
  }
  if (refs.subscriber !== undefined) {
    const subscriber = await findSubscriber(ctx, domain.id, refs.subscriber);
    if (!subscriber) return { found: false, missing: "subscriber", ref: refs.subscriber };
    return { found: true, scope: subscriberScope(customer.id, domain.id, subscriber.id) };
  }
  return { found: true, scope: domainScope(customer.id, domain.id) };
}
