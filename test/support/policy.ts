import type { Policy } from "../../src/domain/policy/policy.ts";
import type { Queryable } from "../../src/store/database.ts";

// Policies set as the API sets them (docs/api.md, "Key policy"), written straight into the database so
// that the counting suites depend on nothing but the tables of migrations/0005: the policy on its row
// (a key's change is announced on keyplane_keys, an entity's on keyplane_directory, by the triggers),
// and a policy with credits starting its balance again, in a new generation, announced on
// keyplane_credits.
export type Holder = `${"key" | "customer" | "domain" | "application" | "subscriber"}:${number}`;

const TABLES = { key: "api_keys", customer: "customers", domain: "domains", application: "applications", subscriber: "subscribers" } as const;

export async function setPolicy(db: Queryable, holder: Holder, policy: Policy | null, now = new Date()): Promise<void> {
  const [level, id] = holder.split(":") as [keyof typeof TABLES, string];
  await db.query(`UPDATE ${TABLES[level]} SET policy = $1 WHERE id = $2`, [policy === null ? null : JSON.stringify(policy), Number(id)]);
  if (policy?.credits) await setBalance(db, holder, policy.credits.remaining, now);
}

/** Sets a holder's balance, as PUT .../credits with `remaining` does: a new generation, announced. */
export async function setBalance(db: Queryable, holder: Holder, remaining: number, now = new Date()): Promise<void> {
  await db.query(
    `INSERT INTO policy_balances (holder, remaining, refilled_at, generation) VALUES ($1, $2, $3, 1)
     ON CONFLICT (holder) DO UPDATE SET remaining = EXCLUDED.remaining, refilled_at = EXCLUDED.refilled_at, generation = policy_balances.generation + 1`,
    [holder, remaining, now],
  );
  await db.query("SELECT pg_notify('keyplane_credits', $1)", [holder]);
}

/** What a holder's balance row holds (no refill applied). */
export async function balanceOf(db: Queryable, holder: Holder): Promise<number | undefined> {
  const rows = await db.query<{ remaining: string }>("SELECT remaining FROM policy_balances WHERE holder = $1", [holder]);
  return rows[0] === undefined ? undefined : Number(rows[0].remaining);
}

/** The units a window's row has handed out. */
export async function grantedOf(db: Queryable, holder: Holder, name: string): Promise<number> {
  const rows = await db.query<{ granted: string }>("SELECT coalesce(sum(granted), 0) AS granted FROM policy_windows WHERE holder = $1 AND name = $2", [holder, name]);
  return Number(rows[0]?.granted ?? 0);
}
