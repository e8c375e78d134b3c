import type { Logger } from "pino";
import { StoreUnavailable } from "../domain/errors.ts";
import type { StoredKey } from "../domain/model.ts";
import { compilePolicy, type CompiledPolicy } from "../domain/policy/compile.ts";
import type { Policy, PolicyLevel } from "../domain/policy/policy.ts";
import type { ListenState, Queryable } from "../store/database.ts";
import { entityPoliciesFind, type EntityPolicies } from "../store/entity-policies.ts";
import type { Maybe } from "./maybe.ts";

// The policies that bind a key (docs/api.md, "Key policy"): its customer's, domain's, application's or
// subscriber's, and its own, outermost first, each compiled once. What a verification does beyond the
// level rules starts here, and for a key that nothing binds ends here: one WeakMap look-up.
//
// A key's own policy comes with the key: a change to it drops the key from every process's cache
// (migrations/0005). An entity's is announced only as "the directory changed" (migrations/0004), and a
// cached key's copy of its entities may be older than that, so entities' policies are read afresh and
// kept by holder until the next announcement, like the path answers of path-scope-cache.ts:
// - any directory announcement forgets every entity's policy and every key's chain;
// - while announcements may be missed, entities' policies are taken from the key itself, which the
//   verification cache then reads afresh on every look-up (key-cache.ts);
// - when the database cannot be reached, from the key as last read (the stale window of docs/api.md,
//   "When the database cannot be reached").

/** One level's policy in a key's chain, and who holds its counters (`customer:3`, `key:17`). */
export interface PolicyLink {
  scope: PolicyLevel;
  holder: string;
  policy: CompiledPolicy;
}

export type PolicyChain = readonly PolicyLink[];

/** A key that nothing binds. */
export const UNBOUND: PolicyChain = Object.freeze([]);

type Entity = Exclude<PolicyLevel, "key">;
const ENTITIES: readonly Entity[] = ["customer", "domain", "application", "subscriber"];

export class PolicyChains {
  readonly #db: Queryable;
  readonly #log: Logger;
  readonly #chains = new WeakMap<StoredKey, { generation: number; chain: PolicyChain }>();
  /** Entities' policies by holder, as read since the last announcement. */
  readonly #entities = new Map<string, Policy | null>();
  readonly #loading = new Map<string, Promise<EntityPolicies>>();
  readonly #compiled = new WeakMap<Policy, CompiledPolicy | undefined>();
  #generation = 0;
  #listening = true;

  constructor(db: Queryable, log: Logger) {
    this.#db = db;
    this.#log = log;
  }

  /** The policies that bind `key`, outermost first (UNBOUND for none); at once when known. */
  chainOf(key: StoredKey): Maybe<PolicyChain> {
    const kept = this.#chains.get(key);
    if (kept !== undefined && kept.generation === this.#generation) return kept.chain;
    const generation = this.#generation;
    const keep = (entities: EntityPolicies): PolicyChain => {
      const chain = this.#chain(key, entities);
      if (generation === this.#generation) this.#chains.set(key, { generation, chain });
      return chain;
    };
    if (!this.#listening) return keep(carried(key));
    const known = this.#known(key);
    if (known) return keep(known);
    return this.#load(key, generation).then(keep, (error: unknown) => {
      if (error instanceof StoreUnavailable) return this.#lastChain(key, kept?.chain);
      throw error;
    });
  }

  /**
   * The database cannot be reached: the chain last resolved for this key object (the verification cache
   * serves it only within the stale window), else its entities' policies as the key was read with them.
   */
  #lastChain(key: StoredKey, last: PolicyChain | undefined): PolicyChain {
    return last ?? this.#chain(key, carried(key));
  }

  /** Forgets every entity's policy: the directory changed. */
  clear(): void {
    this.#generation++;
    this.#entities.clear();
    this.#loading.clear();
  }

  /** The announcement connection's state: lost, entities' policies come with the keys until it is back. */
  listening(state: ListenState): void {
    this.#listening = state === "restored";
    this.clear();
  }

  #known(key: StoredKey): EntityPolicies | undefined {
    const found: Partial<EntityPolicies> = {};
    for (const entity of ENTITIES) {
      const id = entityId(key, entity);
      if (id === null) found[entity] = null;
      else {
        const policy = this.#entities.get(`${entity}:${id}`);
        if (policy === undefined) return undefined;
        found[entity] = policy;
      }
    }
    return found as EntityPolicies;
  }

  #load(key: StoredKey, generation: number): Promise<EntityPolicies> {
    const id = `${key.tenantId}/${key.domainId}/${key.applicationId}/${key.subscriberId}`;
    let loading = this.#loading.get(id);
    if (loading === undefined) {
      loading = entityPoliciesFind(this.#db, key).then((found) => {
        if (generation === this.#generation) {
          for (const entity of ENTITIES) {
            const entityKey = entityId(key, entity);
            if (entityKey !== null) this.#entities.set(`${entity}:${entityKey}`, found[entity]);
          }
        }
        return found;
      });
      const started = loading;
      this.#loading.set(id, started);
      started.finally(() => this.#loading.get(id) === started && this.#loading.delete(id)).catch(() => undefined);
    }
    return loading;
  }

  #chain(key: StoredKey, entities: EntityPolicies): PolicyChain {
    const links: PolicyLink[] = [];
    const add = (scope: PolicyLevel, id: number | null, policy: Policy | null) => {
      if (id === null || policy === null) return;
      const compiled = this.#compile(policy, scope, id);
      if (compiled && binds(compiled)) links.push({ scope, holder: `${scope}:${id}`, policy: compiled });
    };
    for (const entity of ENTITIES) add(entity, entityId(key, entity), entities[entity]);
    add("key", key.id, key.policy);
    return links.length === 0 ? UNBOUND : links;
  }

  #compile(policy: Policy, scope: PolicyLevel, id: number): CompiledPolicy | undefined {
    if (this.#compiled.has(policy)) return this.#compiled.get(policy);
    const parsed = compilePolicy(policy);
    // The API refuses such a policy (a 400): only a hand-written row can hold one. It binds nothing
    // rather than refusing every key below it, and says so.
    if (!parsed.ok) this.#log.error({ holder: `${scope}:${id}`, reason: parsed.reason }, "a stored policy is not valid; it is ignored");
    const compiled = parsed.ok ? parsed.value : undefined;
    this.#compiled.set(policy, compiled);
    return compiled;
  }
}

/** The entities' policies as the key was read with them. */
function carried(key: StoredKey): EntityPolicies {
  return {
    customer: key.tenant.policy ?? null,
    domain: key.domain?.policy ?? null,
    application: key.application?.policy ?? null,
    subscriber: key.subscriber?.policy ?? null,
  };
}

function entityId(key: StoredKey, entity: Entity): number | null {
  switch (entity) {
    case "customer":
      return key.tenantId;
    case "domain":
      return key.domainId;
    case "application":
      return key.applicationId;
    case "subscriber":
      return key.subscriberId;
  }
}

function binds(policy: CompiledPolicy): boolean {
  return policy.restrictions !== undefined || (policy.ratelimits !== undefined && policy.ratelimits.length > 0) || policy.credits !== undefined;
}
