import type { Logger } from "pino";
import { StoreUnavailable } from "../../domain/errors.ts";
import { isRestricted, policySources, type AncestorPolicy } from "../../domain/keys/lineage.ts";
import type { StoredKey } from "../../domain/model.ts";
import { compilePolicy, type CompiledPolicy } from "../../domain/policy/compile.ts";
import type { Policy, PolicyLevel } from "../../domain/policy/policy.ts";
import type { ListenState, Queryable } from "../../store/database.ts";
import { entityPoliciesFind, type EntityPolicies } from "../../store/policy/entity-policies.ts";
import { keyLineagePolicies } from "../../store/keys/keys.ts";
import { after, type Maybe } from "../maybe.ts";

// The policies that bind a key (docs/api.md, "Key policy"): its customer's, domain's, application's or
// subscriber's, its ancestors' own (docs/api.md, "Restricted keys"), and its own, outermost first,
// each compiled once (the order is domain/keys/lineage.ts's). What a verification does beyond the
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
// Ancestors' policies are read by lineage and kept the same way: a change of a key's policy that has
// descendants is announced as a directory change (migrations/0008). While announcements may be
// missed, and when the database cannot be reached, they are taken as last read (reading them afresh
// would put a second wait for the database on every verification of an outage, after the key's
// own), and everything is read again once announcements are heard; a key whose ancestors were never
// read is not served without reading them (an ancestor's policy is never left out).

/** One level's policy in a key's chain, and who holds its counters (`customer:3`, `key:17`). */
export interface PolicyLink {
  scope: PolicyLevel;
  holder: string;
  /** For a key's policy (its own or an ancestor's): the numeric id of the key whose policy it is. */
  id?: number | undefined;
  policy: CompiledPolicy;
}

export type PolicyChain = readonly PolicyLink[];

/** A key that nothing binds. */
export const UNBOUND: PolicyChain = Object.freeze([]);

type Entity = Exclude<PolicyLevel, "key">;
const NO_ANCESTORS: readonly AncestorPolicy[] = Object.freeze([]);
/** Ancestors kept for an outage: bounded, as a cache of what the database says. */
const MAX_ANCESTORS_READ = 100_000;
const ENTITIES: readonly Entity[] = ["customer", "domain", "application", "subscriber"];

export class PolicyChains {
  readonly #db: Queryable;
  readonly #log: Logger;
  readonly #chains = new WeakMap<StoredKey, { generation: number; chain: PolicyChain }>();
  /** Entities' policies by holder, as read since the last announcement. */
  readonly #entities = new Map<string, Policy | null>();
  readonly #loading = new Map<string, Promise<EntityPolicies>>();
  readonly #compiled = new WeakMap<Policy, CompiledPolicy | undefined>();
  /** Ancestors' own policies by lineage, as read since the last announcement. */
  readonly #ancestors = new Map<number, AncestorPolicy>();
  /** The same, as last read whenever: what a key's ancestors are taken as while the database cannot be reached. */
  readonly #ancestorsRead = new Map<number, AncestorPolicy>();
  readonly #restricted = new WeakMap<StoredKey, { generation: number; restricted: boolean }>();
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
    return after(this.ancestorsOf(key), (ancestors) => {
      const keep = (entities: EntityPolicies): PolicyChain => {
        const chain = this.#chain(key, entities, ancestors);
        if (generation === this.#generation) this.#chains.set(key, { generation, chain });
        return chain;
      };
      if (!this.#listening) return keep(carried(key));
      const known = this.#known(key);
      if (known) return keep(known);
      return this.#load(key, generation).then(keep, (error: unknown) => {
        if (error instanceof StoreUnavailable) return this.#lastChain(key, kept?.chain, ancestors);
        throw error;
      });
    });
  }

  /**
   * Whether `key` is restricted (it or an ancestor has a policy of its own): it then reaches only itself
   * and its descendants. At once for a key with a policy or without ancestors.
   */
  restrictedOf(key: StoredKey): Maybe<boolean> {
    if (key.policy !== null) return true;
    if (key.ancestors.length === 0) return false;
    const kept = this.#restricted.get(key);
    if (kept !== undefined && kept.generation === this.#generation) return kept.restricted;
    const generation = this.#generation;
    return after(this.ancestorsOf(key), (ancestors) => {
      const restricted = isRestricted(key.policy, ancestors);
      if (generation === this.#generation) this.#restricted.set(key, { generation, restricted });
      return restricted;
    });
  }

  /** The own policies of `key`'s ancestors (none for a key without); at once when known. */
  ancestorsOf(key: StoredKey): Maybe<readonly AncestorPolicy[]> {
    if (key.ancestors.length === 0) return NO_ANCESTORS;
    const kept = this.#listening ? this.#ancestors : this.#ancestorsRead;
    const known: AncestorPolicy[] = [];
    for (const lineage of key.ancestors) {
      const a = kept.get(lineage);
      if (a === undefined) break;
      known.push(a);
    }
    if (known.length === key.ancestors.length) return known;
    const generation = this.#generation;
    return keyLineagePolicies(this.#db, key.ancestors).then(
      (rows) => {
        // A lineage with no key left (its entity was removed with it) binds nothing.
        const found = new Map(rows.map((a) => [a.lineage, a]));
        const read = key.ancestors.map((lineage) => found.get(lineage) ?? { lineage, id: lineage, policy: null });
        if (this.#ancestorsRead.size > MAX_ANCESTORS_READ) this.#ancestorsRead.clear();
        for (const a of read) {
          this.#ancestorsRead.set(a.lineage, a);
          if (this.#listening && generation === this.#generation) this.#ancestors.set(a.lineage, a);
        }
        return read;
      },
      (error: unknown) => {
        const seen = key.ancestors.map((lineage) => this.#ancestorsRead.get(lineage));
        if (error instanceof StoreUnavailable && !seen.includes(undefined)) return seen as AncestorPolicy[];
        throw error;
      },
    );
  }

  /**
   * The database cannot be reached: the chain last resolved for this key object (the verification cache
   * serves it only within the stale window), else its entities' policies as the key was read with them.
   */
  #lastChain(key: StoredKey, last: PolicyChain | undefined, ancestors: readonly AncestorPolicy[]): PolicyChain {
    return last ?? this.#chain(key, carried(key), ancestors);
  }

  /** Forgets every entity's policy: the directory changed. */
  clear(): void {
    this.#generation++;
    this.#entities.clear();
    this.#loading.clear();
    this.#ancestors.clear();
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

  #chain(key: StoredKey, entities: EntityPolicies, ancestors: readonly AncestorPolicy[]): PolicyChain {
    const links: PolicyLink[] = [];
    const levels = ENTITIES.flatMap((entity) => {
      const id = entityId(key, entity);
      return id === null ? [] : [{ scope: entity, holder: `${entity}:${id}`, policy: entities[entity] }];
    });
    for (const source of policySources(levels, ancestors, key)) {
      const compiled = this.#compile(source.policy, source.holder);
      if (compiled && binds(compiled)) links.push({ scope: source.scope, holder: source.holder, id: source.id, policy: compiled });
    }
    return links.length === 0 ? UNBOUND : links;
  }

  #compile(policy: Policy, holder: string): CompiledPolicy | undefined {
    if (this.#compiled.has(policy)) return this.#compiled.get(policy);
    const parsed = compilePolicy(policy, { stored: true });
    // The API refuses such a policy (a 400): only a hand-written row can hold one. It binds nothing
    // rather than refusing every key below it, and says so.
    if (!parsed.ok) this.#log.error({ holder, reason: parsed.reason }, "a stored policy is not valid; it is ignored");
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
