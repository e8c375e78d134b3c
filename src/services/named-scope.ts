import { parseNamed } from "../domain/identifier.ts";
import { domainScope, tenantScope, type Scope } from "../domain/scope.ts";
import { entityFind, TABLES } from "../store/directory.ts";
import type { Context } from "./context.ts";
import { findSubscriber } from "./directory.ts";

/** A scope named from outside any key (an ApiKey resource): each entity by id, uuid or name. */
export interface ScopeRefs {
  customer: string;
  domain?: string | undefined;
  application?: string | undefined;
  subscriber?: string | undefined;
}

export type NamedScope =
  | { found: true; scope: Scope }
  | { found: false; missing: "customer" | "domain" | "application" | "subscriber"; ref: string };

/**
 * Resolves the entities of `refs`, each within the one above it (application and subscriber within the
 * domain), to a scope; else names the first entity that is unknown.
 */
export async function resolveNamedScope(ctx: Context, refs: ScopeRefs): Promise<NamedScope> {
  const customer = await entityFind(ctx.db, TABLES.customers, parseNamed(refs.customer), null);
  if (!customer) return { found: false, missing: "customer", ref: refs.customer };
  if (refs.domain === undefined) return { found: true, scope: tenantScope(customer.id) };

  const domain = await entityFind(ctx.db, TABLES.domains, parseNamed(refs.domain), customer.id);
  if (!domain) return { found: false, missing: "domain", ref: refs.domain };
  if (refs.application !== undefined) {
    const app = await entityFind(ctx.db, TABLES.applications, parseNamed(refs.application), domain.id);
    if (!app) return { found: false, missing: "application", ref: refs.application };
    return { found: true, scope: { tenantId: customer.id, domainId: domain.id, applicationId: app.id, subscriberId: null } };
  }
  if (refs.subscriber !== undefined) {
    const subscriber = await findSubscriber(ctx, domain.id, refs.subscriber);
    if (!subscriber) return { found: false, missing: "subscriber", ref: refs.subscriber };
    return { found: true, scope: { tenantId: customer.id, domainId: domain.id, applicationId: null, subscriberId: subscriber.id } };
  }
  return { found: true, scope: domainScope(customer.id, domain.id) };
}
