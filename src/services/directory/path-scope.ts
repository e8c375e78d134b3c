import type { PathScopes } from "../../domain/scope/access.ts";
import { parseWithSelf } from "../../domain/scope/identifier.ts";
import { applicationScope, customerScope, domainScope, subscriberScope, type Scope, type ScopeRefs } from "../../domain/scope/scope.ts";
import { entityFind, TABLES } from "../../store/directory/directory.ts";
import type { DirectoryNeeds } from "./needs.ts";
import { findSubscriber } from "./directory.ts";

/**
 * The scopes a key path names: `gate`, that of its first entity, which the caller must be able to
 * manage to use the path at all (docs/api.md, "Paths and scopes": a key uses the path of its own scope, or a parent's), and
 * `target`, that of its last, where the keys live. Undefined when any entity is unknown or does not
 * lie in the one before it: the caller learns only 401, never which.
 *
 * `self` is the caller's own entity; an application or subscriber named by name or msisdn on a path
 * without a domain is looked for within the caller's domain.
 */
export async function resolvePathScope(ctx: Pick<DirectoryNeeds, "db">, refs: ScopeRefs, caller: Scope): Promise<PathScopes | undefined> {
  const scopes: Scope[] = [];
  const within = () => scopes[scopes.length - 1];

  if (refs.customer !== undefined) {
    const ident = parseWithSelf(refs.customer, caller.tenantId);
    const customer = ident && (await entityFind(ctx.db, TABLES.customers, ident, null));
    if (!customer) return undefined;
    scopes.push(customerScope(customer.id));
  }
  if (refs.domain !== undefined) {
    const ident = parseWithSelf(refs.domain, caller.domainId);
    const domain = ident && (await entityFind(ctx.db, TABLES.domains, ident, within()?.tenantId ?? null));
    if (!domain) return undefined;
    scopes.push(domainScope(domain.tenantId, domain.id));
  }
  // Below the domain, names are unique only within a domain: the path's, else the caller's.
  const pathDomain = within()?.domainId ?? null;
  const nameDomain = pathDomain ?? caller.domainId;
  if (refs.application !== undefined) {
    const ident = parseWithSelf(refs.application, caller.applicationId);
    const app = ident && (await entityFind(ctx.db, TABLES.applications, ident, ident.kind === "name" ? nameDomain : pathDomain));
    if (!app) return undefined;
    scopes.push(applicationScope(app.tenantId, app.domainId, app.id));
  }
  if (refs.subscriber !== undefined) {
    const subscriber =
      refs.subscriber === "self"
        ? caller.subscriberId === null ? undefined : await entityFind(ctx.db, TABLES.subscribers, { kind: "id", id: caller.subscriberId }, pathDomain)
        : await findSubscriber(ctx, nameDomain, refs.subscriber);
    if (!subscriber) return undefined;
    scopes.push(subscriberScope(subscriber.tenantId, subscriber.domainId, subscriber.id));
  }
  const gate = scopes[0];
  const target = within();
  return gate && target ? { gate, target } : undefined;
}
