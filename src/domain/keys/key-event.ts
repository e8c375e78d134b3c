import type { KeyType } from "../model.ts";

// The record of every change to a key (docs/api.md, "Events"): append-only, written in the same
// transaction as the change, and never holding a token.
export const KEY_ACTIONS = ["created", "updated", "rotated", "deleted", "expired", "leaked", "exported"] as const;
export type KeyAction = (typeof KEY_ACTIONS)[number];

/**
 * Who made a change: a key (through the REST API), the admin, the operator for an ApiKey, the runtime,
 * keyplane itself, a scanner's leak report (docs/leaks.md), or an import of keys (docs/migration.md).
 */
export type Actor =
  | { type: "key"; id: number; name: string }
  | { type: "admin" }
  | { type: "operator"; apiKey: string }
  | { type: "runtime" }
  | { type: "system" }
  | { type: "scanner"; name: ScannerName }
  | { type: "import" };

/** Who reported a leak: GitHub's secret scanning (POST /leaks/github), or another scanner through the admin (POST /admin/leaks). */
export type ScannerName = "github" | "admin";

/** The actor of a change and the request that carried it, if any: what every use case that changes a key is given. */
export interface Author {
  actor: Actor;
  requestId: string | null;
}

export const ADMIN: Author = { actor: { type: "admin" }, requestId: null };
export const RUNTIME: Author = { actor: { type: "runtime" }, requestId: null };
export const SYSTEM: Author = { actor: { type: "system" }, requestId: null };
export const operator = (apiKey: string): Author => ({ actor: { type: "operator", apiKey }, requestId: null });
export const scanner = (name: ScannerName, requestId: string | null): Author => ({ actor: { type: "scanner", name }, requestId });

/** A changed field's value before and after; times as RFC 3339 text, as the API shows them. */
export type Changes = Record<string, [unknown, unknown]>;

/** A `leaked` event's changes: not a field's before and after, but where the token was found (docs/leaks.md). */
export interface LeakChanges {
  leak: { url: string | null; source: string | null };
}

/** The key an event is about, as it was after the change. */
export interface EventKey {
  id: number;
  name: string;
  type: KeyType;
  tenantId: number;
  domainId: number | null;
  applicationId: number | null;
  subscriberId: number | null;
}

export interface KeyEvent {
  id: number;
  at: Date;
  action: KeyAction;
  /** The key it is about; null for an export (docs/migration.md), which is about no one key. */
  key: EventKey | null;
  actor: Actor;
  changes: Changes | LeakChanges;
  requestId: string | null;
  /** An export's number of keys. */
  count?: number;
}

/** The fields of a key that events follow. */
export interface Tracked {
  name: string;
  active: boolean;
  expiresAt: Date | null;
  replacedBy: number | null;
}

const shown = (value: Tracked[keyof Tracked]) => (value instanceof Date ? value.toISOString() : value);

/** The fields that differ between `before` and `after`; `before` undefined for a key that did not exist. */
export function changesBetween(before: Tracked | undefined, after: Tracked): Changes {
  const changes: Changes = {};
  for (const field of ["name", "active", "expiresAt", "replacedBy"] as const) {
    const was = before === undefined ? null : shown(before[field]);
    const is = shown(after[field]);
    if (was !== is) changes[field] = [was, is];
  }
  return changes;
}
