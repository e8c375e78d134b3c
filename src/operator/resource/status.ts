// The status an ApiKey should show, and whether it already does. Pure.
import type { ApiKeyCondition, ApiKeyStatus } from "./apikey.ts";

export const READY = "Ready";

/** Why an ApiKey is or is not Ready: the reason of its Ready condition. */
export type ReadyReason = "Provisioned" | "InvalidSpec" | "NamespaceNotAllowed" | "ScopeNotFound" | "KeyConflict" | "SecretConflict" | "Error";

export interface Readiness {
  status: "True" | "False";
  reason: ReadyReason;
  message: string;
  /** Work under way on a Ready key (a rotation until its old key is retired): Reconciling True says it. */
  progress?: { reason: string; message: string };
}

/** metav1.Time: RFC 3339 in whole seconds, as the API server writes its own timestamps. */
export function kubeTime(at: Date): string {
  return at.toISOString().replace(/\.\d+Z$/, "Z");
}

export function readyConditionOf(status: ApiKeyStatus | undefined): ApiKeyCondition | undefined {
  return status?.conditions?.find((c) => c.type === READY);
}

export const RECONCILING = "Reconciling";
export const STALLED = "Stalled";

/** The reasons a person must act on: Stalled True carries them (docs/operator.md, "Status"). */
const STALLING: ReadonlySet<ReadyReason> = new Set(["InvalidSpec", "NamespaceNotAllowed", "ScopeNotFound", "KeyConflict", "SecretConflict"]);

/**
 * The kstatus conditions: Ready; Stalled True with Ready's reason when a person must act; Reconciling True
 * while the operator still retries toward the spec, or works on a Ready key (with that work's reason).
 * Stalled and Reconciling are left out otherwise.
 */
export function conditions(current: ApiKeyStatus | undefined, ready: Readiness, generation: number | undefined, now: Date): ApiKeyCondition[] {
  const make = (type: string, reason: string, message: string) =>
    condition(current, { type, status: type === READY ? ready.status : "True", reason, message }, generation, now);
  const stalled = ready.status === "False" && STALLING.has(ready.reason);
  const reconciling = ready.status === "False" && !stalled ? ready : ready.progress;
  return [
    make(READY, ready.reason, ready.message),
    ...(stalled ? [make(STALLED, ready.reason, ready.message)] : []),
    ...(reconciling ? [make(RECONCILING, reconciling.reason, reconciling.message)] : []),
  ];
}

/** A condition; its lastTransitionTime moves only when its status flips. */
function condition(
  current: ApiKeyStatus | undefined,
  wanted: Pick<ApiKeyCondition, "type" | "status" | "reason" | "message">,
  generation: number | undefined,
  now: Date,
): ApiKeyCondition {
  const previous = current?.conditions?.find((c) => c.type === wanted.type);
  return {
    ...wanted,
    lastTransitionTime: previous?.status === wanted.status ? previous.lastTransitionTime : kubeTime(now),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
}

/** Deep equality of JSON values, where an absent field and an undefined one are the same. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) {
    if (!sameJson(x[k], y[k])) return false;
  }
  return true;
}
