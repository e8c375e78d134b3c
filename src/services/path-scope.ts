import { parseWithSelf } from "../domain/identifier.ts";
import { domainScope, tenantScope, type Scope } from "../domain/scope.ts";
import { entityFind, TABLES } from "../store/directory.ts";
import type { Context } from "./context.ts";
import { findSubscriber } from "./directory.ts";

/** The entities a key path names, outermost first: /customers/{customer}/domains/{domain}/... */
export interface PathRefs {
  customer?: string;
  domain?: string;
  application?: string;
  subscriber?: string;
}

/**
 * The scopes a key path names: `gate`, that of its first entity, which the caller must be able to
 * manage to use the path at all (SPEC 4.4: a key uses the path of its own scope, or a parent's), and
 * `target`, that of its last, where the keys live. Undefined when any entity is unknown or does not
 * lie in the one before it: the caller learns only 401, never which.
 *
 * `self` is the caller's own entity; an application or subscriber named by name or msisdn on a path
 * without a domain is looked for within the caller's domain.
 */
export async function resolvePathScope(ctx: Context, refs: PathRefs, caller: Scope): Promise<{ gate: Scope; target: Scope } | undefined> {
  const scopes: Scope[] = [];
  const within = () => scopes[scopes.length - 1];

  if (refs.customer !== undefined) {
    const ident = parseWithSelf(refs.customer, caller.tenantId);
    const customer = ident && (await entityFind(ctx.db, TABLES.customers, ident, null));
    if (!customer) return undefined;
    scopes.push(tenantScope(customer.id));
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
    scopes.push({ tenantId: app.tenantId, domainId: app.domainId, applicationId: app.id, subscriberId: null });
  }
  if (refs.subscriber !== undefined) {
    const subscriber =
      refs.subscriber === "self"
        ? caller.subscriberId === null ? undefined : await entityFind(ctx.db, TABLES.subscribers, { kind: "id", id: caller.subscriberId }, pathDomain)
        : await findSubscriber(ctx, nameDomain, refs.subscriber);
    if (!subscriber) return undefined;
    scopes.push({ tenantId: subscriber.tenantId, domainId: subscriber.domainId, applicationId: null, subscriberId: subscriber.id });
  }
  const gate = scopes[0];
  const target = within();
  return gate && target ? { gate, target } : undefined;
}
