// The import's per-line rules (docs/migration.md): what a line must hold beyond its JSON shape, and
// what it comes to against the key its token or its name already names. Pure: no store, no HTTP; it
// may use the rest of domain/.
import type { KeyType } from "../model.ts";
import type { Policy } from "../policy/policy.ts";
import type { Scope } from "../scope/scope.ts";

/** The import's line form, as the export writes it: entities by id, uuid or name (docs/api.md, "Import and export"). */
export interface ImportLine {
  customer: string;
  domain?: string | undefined;
  application?: string | undefined;
  subscriber?: string | undefined;
  /** The user whose key this is, by email (or id, uuid). */
  user?: string | undefined;
  name: string;
  keyId: string;
  type?: KeyType | undefined;
  active: boolean;
  createdAt?: Date | undefined;
  expiresAt?: Date | null | undefined;
  policy?: Policy | null | undefined;
}

/** The type a line's scope gives its key. */
export function importedType(line: Pick<ImportLine, "application" | "subscriber" | "user">): KeyType {
  if (line.user !== undefined) return "user";
  if (line.application !== undefined) return "application";
  if (line.subscriber !== undefined) return "subscriber";
  return "customer";
}

/** What is wrong with a line of a valid shape, judged at `now`; undefined when nothing is. */
export function importLineProblem(line: ImportLine, now: Date): string | undefined {
  if ((line.application !== undefined || line.subscriber !== undefined) && line.domain === undefined) {
    return "an application or a subscriber needs its domain";
  }
  if (line.application !== undefined && line.subscriber !== undefined) return "a key has an application or a subscriber, not both";
  if (line.user !== undefined && (line.application !== undefined || line.subscriber !== undefined)) {
    return "a user's key is at its customer's or its domain's level";
  }
  const type = importedType(line);
  if (line.type !== undefined && line.type !== type) return `type must be "${type}" for this scope`;
  if (line.expiresAt && line.expiresAt.getTime() <= now.getTime()) return "expiresAt must lie in the future";
  return undefined;
}

/** A line's key as its scope resolved: what it is compared with. Policies as canonical JSON text (null for none). */
export interface ImportedKey {
  scope: Scope;
  userId: number | null;
  name: string;
  active: boolean;
  expiresAt: Date | null;
  policy: string | null;
}

/** A stored key that the line's token names, whatever became of it. */
export interface TokenHolder extends ImportedKey {
  id: number;
  /** Deleted, rotated out or expired: its token is never a key again. */
  gone: boolean;
}

export type ImportVerdict =
  | { status: "created" }
  | { status: "unchanged" | "updated"; id: number }
  | { status: "conflict"; message: string };

const sameScope = (a: Scope, b: Scope) =>
  a.tenantId === b.tenantId && a.domainId === b.domainId && a.applicationId === b.applicationId && a.subscriberId === b.subscriberId;

/**
 * What a line comes to: `byToken` is the key its token already is (if any), `nameTaken` whether a live
 * key of another token holds its name in its scope (or its user's key).
 */
export function importVerdict(line: ImportedKey, byToken: TokenHolder | undefined, nameTaken: boolean): ImportVerdict {
  if (byToken) {
    if (byToken.gone) return { status: "conflict", message: "This token was a key that is deleted or expired: a token is never issued twice." };
    if (!sameScope(byToken.scope, line.scope) || byToken.userId !== line.userId || byToken.name !== line.name) {
      return { status: "conflict", message: "This token is another key's (another scope or name)." };
    }
    const same = byToken.active === line.active && byToken.expiresAt?.getTime() === line.expiresAt?.getTime() && byToken.policy === line.policy;
    return { status: same ? "unchanged" : "updated", id: byToken.id };
  }
  if (nameTaken) {
    return {
      status: "conflict",
      message: line.userId !== null ? "This user already has another live key." : `A key named "${line.name}" already exists in this scope with another token.`,
    };
  }
  return { status: "created" };
}
