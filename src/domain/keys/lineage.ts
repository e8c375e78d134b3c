import type { Policy } from "../policy/policy.ts";
import type { Scope } from "../scope/scope.ts";

// Who made a key, and what that binds (docs/api.md, "Restricted keys"). A key made through the key
// paths is its caller's child. Keys are known to their descendants by their lineage: the id of the
// first key of their rotation chain, which every rotation carries, so a rotated key stays the same
// ancestor and the same holder of counters.

/** A key's place among the keys that made one another. */
export interface Lineage {
  /** The key's numeric id. */
  id: number;
  /** The id of the first key of its rotation chain (its own id when it was never a rotation's successor). */
  lineage: number;
  /** The lineages of its parent, its parent's parent, ..., outermost first. */
  ancestors: readonly number[];
}

/** The ancestors a key made by `parent` records: the parent's, then the parent itself. */
export function childAncestors(parent: Lineage): number[] {
  return [...parent.ancestors, parent.lineage];
}

/** A calling key, as the key paths' use cases judge what it may reach. */
export interface KeyCaller extends Lineage {
  /** It or an ancestor has a policy of its own: it reaches only itself and its descendants. */
  restricted: boolean;
}

/** A scope to work in, and the key that works there (none for the admin, the operator and the runtime). */
export interface Reach extends Scope {
  readonly caller?: KeyCaller | undefined;
}

/** A key is restricted when it or one of its ancestors has a policy of its own. */
export function isRestricted(own: Policy | null, ancestors: readonly { policy: Policy | null }[]): boolean {
  return own !== null || ancestors.some((a) => a.policy !== null);
}

/** Is `key` the key `lineage` (any token of its rotation chain) or one of its descendants? */
export function isWithin(key: Lineage, lineage: number): boolean {
  return key.lineage === lineage || key.ancestors.includes(lineage);
}

/** May `caller` see and manage `key`? Anyone unrestricted may (within its scope); a restricted key, only itself and its descendants. */
export function reaches(caller: KeyCaller | undefined, key: Lineage): boolean {
  return caller === undefined || !caller.restricted || isWithin(key, caller.lineage);
}

/** Is `key` the caller itself (any token of its rotation chain): whose policy and balance it may not set. */
export function isSelf(caller: KeyCaller | undefined, key: Lineage): boolean {
  return caller !== undefined && caller.lineage === key.lineage;
}

/** An ancestor's own policy, as its newest key holds it (a rotation carries it on). */
export interface AncestorPolicy {
  lineage: number;
  /** The numeric id of the ancestor's newest key: the id a verdict names. */
  id: number;
  policy: Policy | null;
}

/** One policy that binds a key, with the holder of its counters and, for a key's, the key whose it is. */
export interface PolicySource<L extends string = string> {
  scope: L | "key";
  holder: string;
  /** For a key's policy: the numeric id of the key whose policy it is. */
  id?: number;
  policy: Policy;
}

/** The holder of a key's own counters: its lineage, so that rotations continue them. */
export const keyHolder = (key: { lineage: number }): string => `key:${key.lineage}`;

/**
 * The policies that bind a key, outermost first: its entities' (as given, outermost first), then
 * each ancestor's own, the oldest first, then its own. None can loosen another: every one applies,
 * and each ancestor's counters are shared by it and all its descendants.
 */
export function policySources<L extends string>(
  entities: readonly { scope: L; holder: string; policy: Policy | null }[],
  ancestors: readonly AncestorPolicy[],
  key: Lineage & { policy: Policy | null },
): PolicySource<L>[] {
  const sources: PolicySource<L>[] = [];
  for (const e of entities) if (e.policy !== null) sources.push({ scope: e.scope, holder: e.holder, policy: e.policy });
  const byLineage = new Map(ancestors.map((a) => [a.lineage, a]));
  for (const lineage of key.ancestors) {
    const a = byLineage.get(lineage);
    if (a?.policy) sources.push({ scope: "key", holder: keyHolder(a), id: a.id, policy: a.policy });
  }
  if (key.policy !== null) sources.push({ scope: "key", holder: keyHolder(key), id: key.id, policy: key.policy });
  return sources;
}
