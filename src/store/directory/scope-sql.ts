import type { Scope } from "../../domain/scope/scope.ts";

/**
 * The WHERE condition selecting rows (keys, or events by their key's scope) inside `scope`, on the
 * columns of table alias `alias`, with its parameters numbered from `$first` on.
 */
export function insideScope(scope: Scope, first: number, alias: string): { sql: string; params: unknown[] } {
  const parts = [`${alias}.tenant_id`];
  const params: unknown[] = [scope.tenantId];
  for (const [column, value] of [["domain_id", scope.domainId], ["application_id", scope.applicationId], ["subscriber_id", scope.subscriberId]] as const) {
    if (value !== null) {
      parts.push(`${alias}.${column}`);
      params.push(value);
    }
  }
  return { sql: parts.map((c, i) => `${c} = $${first + i}`).join(" AND "), params };
}

/**
 * The condition of a key of alias `k` that is the key of lineage `$n` (any token of its rotation chain)
 * or one of its descendants (docs/api.md, "Restricted keys"): api_keys_lineage, the primary key and the
 * GIN index api_keys_ancestors answer it (that index holds only keys with ancestors: migrations/0012).
 */
export const withinLineage = (n: number) => `(k.id = $${n} OR k.lineage = $${n} OR (k.ancestors <> '{}' AND k.ancestors @> ARRAY[$${n}::integer]))`;
