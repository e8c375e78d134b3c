// The import's and the export's queries of api_keys (docs/migration.md): the keys a batch of tokens
// and names already names, and the export's keyset pages (the import's insert is keys/keys.ts's
// keyInsertIds). It may use domain/, and store/'s policy/ (a policy column).
import type { Policy } from "../../domain/policy/policy.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Queryable } from "../database.ts";
import { policyFromColumn } from "../policy/policies.ts";

/** A key a token names, whatever became of it. */
export interface KeyByToken {
  id: number;
  hash: string;
  scope: Scope;
  userId: number | null;
  name: string;
  active: boolean;
  expiresAt: Date | null;
  policy: Policy | null;
  /** Deleted, rotated out or expired. */
  gone: boolean;
}

/** The keys behind these token hashes (hex), deleted and expired ones too, by hash. */
export async function keyFindByTokens(q: Queryable, hashes: readonly string[], now: Date): Promise<Map<string, KeyByToken>> {
  const rows = await q.query(
    `SELECT k.id, encode(k.token_hash, 'hex') AS hash, k.tenant_id, k.domain_id, k.application_id, k.subscriber_id, k.user_id, k.name,
            k.active, k.expires_at, k.policy,
            (k.deleted_at IS NOT NULL OR k.replaced_by IS NOT NULL OR (k.expires_at IS NOT NULL AND k.expires_at <= $2)) AS gone
       FROM api_keys k WHERE k.token_hash = ANY(SELECT decode(h, 'hex') FROM unnest($1::text[]) AS h)`,
    [hashes, now],
  );
  return new Map(rows.map((r) => [r.hash as string, {
    id: r.id as number,
    hash: r.hash as string,
    scope: { tenantId: r.tenant_id as number, domainId: (r.domain_id ?? null) as number | null, applicationId: (r.application_id ?? null) as number | null, subscriberId: (r.subscriber_id ?? null) as number | null },
    userId: (r.user_id ?? null) as number | null,
    name: r.name as string,
    active: r.active as boolean,
    expiresAt: (r.expires_at ?? null) as Date | null,
    policy: policyFromColumn(r.policy),
    gone: r.gone as boolean,
  }]));
}

/** A name in a scope (users' keys aside), or a user's key. */
export interface KeyIdentity {
  scope: Scope;
  name: string;
  userId: number | null;
}

/**
 * A live key that holds its name (not rotated out, not expired), `now` being $7: the conditions of
 * api_keys_identity_live and api_keys_user_live, so that each look-up is a probe of one of them.
 */
const HOLDS_ITS_NAME = "k.deleted_at IS NULL AND k.replaced_by IS NULL AND k.expiry_recorded_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $7)";

/**
 * For each identity, in order, whether a live key (not rotated out, not expired) already holds it. An
 * import asks only about the lines its insert skipped, to say why: the insert finds a taken name itself.
 */
export async function keyIdentitiesTaken(q: Queryable, identities: readonly KeyIdentity[], now: Date): Promise<boolean[]> {
  const column = <T>(value: (i: KeyIdentity) => T) => identities.map(value);
  const rows = await q.query<{ n: number; taken: boolean }>(
    `SELECT v.n, CASE WHEN v.user_id IS NOT NULL
         THEN EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = v.user_id AND ${HOLDS_ITS_NAME})
         ELSE EXISTS (SELECT 1 FROM api_keys k
                       WHERE k.user_id IS NULL AND k.tenant_id = v.tenant_id AND coalesce(k.domain_id, 0) = v.domain_id
                         AND coalesce(k.application_id, 0) = v.application_id AND coalesce(k.subscriber_id, 0) = v.subscriber_id
                         AND k.name = v.name AND ${HOLDS_ITS_NAME}) END AS taken
       FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::integer[], $5::text[], $6::integer[])
         WITH ORDINALITY AS v(tenant_id, domain_id, application_id, subscriber_id, name, user_id, n)
      ORDER BY v.n`,
    [
      column((i) => i.scope.tenantId), column((i) => i.scope.domainId ?? 0), column((i) => i.scope.applicationId ?? 0),
      column((i) => i.scope.subscriberId ?? 0), column((i) => i.name), column((i) => i.userId), now,
    ],
  );
  return rows.map((r) => r.taken);
}

/**
 * Refreshes the planner's statistics of the tables an import fills: api_keys, which the import reads
 * as it goes, and once it is done (`done`) key_events too. Autovacuum would, a minute or so later:
 * until then the planner takes a table grown by a million rows for the small one it was, and reads a
 * whole range where a probe of the primary key would do (an export page read every row after it:
 * 100,000 keys exported in 10.8 s before, 1.7 s after).
 */
export async function keyStatisticsRefresh(q: Queryable, done: boolean): Promise<void> {
  await q.query(done ? "ANALYZE api_keys, key_events" : "ANALYZE api_keys");
}

/** A live key as the export writes it: its entities by name, its token sealed. */
export interface ExportedRow {
  id: number;
  hash: Buffer;
  sealed: Buffer;
  customer: string;
  domain: string | null;
  application: string | null;
  subscriber: string | null;
  user: string | null;
  name: string;
  type: string;
  active: boolean;
  createdAt: Date;
  expiresAt: Date | null;
  policy: Policy | null;
}

/** What an export is narrowed to: a customer, and a domain within it. */
export interface ExportNarrowing {
  tenantId?: number | undefined;
  domainId?: number | undefined;
}

const EXPORT_PAGE = `
  SELECT k.id, k.token_hash, k.token_sealed, c.name AS customer, d.domain, a.name AS application, s.msisdn AS subscriber, u.email AS "user",
         k.name, k.type, k.active, k.created_at, k.expires_at, k.policy
    FROM api_keys k
    JOIN customers c ON c.id = k.tenant_id
    LEFT JOIN domains d ON d.id = k.domain_id
    LEFT JOIN applications a ON a.id = k.application_id
    LEFT JOIN subscribers s ON s.id = k.subscriber_id
    LEFT JOIN users u ON u.id = k.user_id
   WHERE k.id > $1 AND k.deleted_at IS NULL AND k.replaced_by IS NULL AND (k.expires_at IS NULL OR k.expires_at > $3)
     AND ($4::integer IS NULL OR k.tenant_id = $4) AND ($5::integer IS NULL OR k.domain_id = $5)
   ORDER BY k.id LIMIT $2`;

/** One keyset page of the live keys that hold their names (a rotated-out key in its grace period is left out), by id. */
export async function keyExportPage(q: Queryable, narrowing: ExportNarrowing, after: number, limit: number, now: Date): Promise<ExportedRow[]> {
  const rows = await q.query(EXPORT_PAGE, [after, limit, now, narrowing.tenantId ?? null, narrowing.domainId ?? null]);
  return rows.map((r) => ({
    id: r.id as number,
    hash: r.token_hash as Buffer,
    sealed: r.token_sealed as Buffer,
    customer: r.customer as string,
    domain: (r.domain ?? null) as string | null,
    application: (r.application ?? null) as string | null,
    subscriber: (r.subscriber ?? null) as string | null,
    user: (r.user ?? null) as string | null,
    name: r.name as string,
    type: r.type as string,
    active: r.active as boolean,
    createdAt: r.created_at as Date,
    expiresAt: (r.expires_at ?? null) as Date | null,
    policy: policyFromColumn(r.policy),
  }));
}
