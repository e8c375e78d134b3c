// The status an ApiKey should show, and whether it already does. Pure.
import type { ApiKeyCondition, ApiKeyStatus } from "./apikey.ts";

export const READY = "Ready";
export const RECONCILING = "Reconciling";
export const STALLED = "Stalled";

/** Why an ApiKey is or is not Ready: the reason of its Ready condition. */
export type ReadyReason = "Provisioned" | "InvalidSpec" | "ScopeNotFound" | "KeyConflict" | "SecretConflict" | "Error";

export interface Readiness {
  status: "True" | "False";
  reason: ReadyReason;
  message: string;
}

/** metav1.Time: RFC 3339 in whole seconds, as the API server writes its own timestamps. */
export function kubeTime(at: Date): string {
  return at.toISOString().replace(/\.\d+Z$/, "Z");
}

export function readyConditionOf(status: ApiKeyStatus | undefined): ApiKeyCondition | undefined {
  return status?.conditions?.find((c) => c.type === READY);
}

/** Reasons that only a change by a person can clear: the ApiKey is Stalled. */
const NEEDS_A_PERSON: ReadonlySet<ReadyReason> = new Set(["InvalidSpec", "ScopeNotFound", "KeyConflict", "SecretConflict"]);

/**
 * The conditions kstatus reads (docs/operator.md, "What it does", item 8), so that Argo CD and Flux judge health
 * without custom code: Ready; Stalled, True with Ready's reason when only a person can clear it;
 * Reconciling, True while the operator keeps working toward the spec (it retries a failure of its
 * own). Each carries the generation it was computed for, and its lastTransitionTime moves only when
 * its status flips.
 */
export function kstatusConditions(current: ApiKeyStatus | undefined, ready: Readiness, generation: number | undefined, now: Date): ApiKeyCondition[] {
  const stalled = ready.status === "False" && NEEDS_A_PERSON.has(ready.reason);
  const reconciling = ready.status === "False" && !stalled;
  const condition = (type: string, status: boolean | "True" | "False", message: string): ApiKeyCondition => {
    const value = status === true || status === "True" ? "True" : "False";
    const previous = current?.conditions?.find((c) => c.type === type);
    return {
      type,
      status: value,
      reason: ready.reason,
      message,
      lastTransitionTime: previous?.status === value ? previous.lastTransitionTime : kubeTime(now),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  };
  return [
    condition(READY, ready.status, ready.message),
    condition(RECONCILING, reconciling, reconciling ? ready.message : stalled ? "Waiting for a change by a person" : "The spec is carried out"),
    condition(STALLED, stalled, stalled ? ready.message : "Nothing waits for a person"),
  ];
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
