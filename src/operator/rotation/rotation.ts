// rotation/ of operator/: when an ApiKey's key is rotated, the plan of a rotation, and the workloads it
// restarts. It may use domain/, resource/ and reconcile/'s actions.
//
// The rotation decision of an ApiKey (docs/operator.md, "Rotation"): whether to rotate now, to record a
// request without rotating, to retire the replaced key, or to wait until when. Pure.
import type { EffectiveRotation, RotationStatus } from "../resource/apikey.ts";

export interface RotationInput {
  /** spec.rotation, resolved; undefined when the spec asks for none. */
  rotation: EffectiveRotation | undefined;
  /** The value of the keyplane.dev/rotate annotation. */
  request: string | undefined;
  /** status.rotation as last written. */
  status: RotationStatus | undefined;
  /** Whether the ApiKey had a key before: a new one is not rotated for a request it was created with. */
  provisioned: boolean;
  /** When the current key was issued. */
  issuedAt: Date;
  /** Whether every workload restarted for the rotation under way has rolled out. */
  rolledOut: boolean;
  now: Date;
}

export type RotationDecision =
  | { action: "none"; requeueAt?: Date }
  | { action: "record"; request: string }
  | { action: "rotate"; cause: "every" | "request" }
  | { action: "retire"; cause: "rolledOut" | "gracePeriodEnded" }
  | { action: "await"; requeueAt: Date };

export function decideRotation(i: RotationInput): RotationDecision {
  const previous = i.status?.previousKey;
  if (previous) {
    if (i.rolledOut) return { action: "retire", cause: "rolledOut" };
    const expiresAt = new Date(previous.expiresAt);
    return i.now >= expiresAt ? { action: "retire", cause: "gracePeriodEnded" } : { action: "await", requeueAt: expiresAt };
  }
  if (i.request !== undefined && i.request !== i.status?.lastRequest) {
    return i.provisioned ? { action: "rotate", cause: "request" } : { action: "record", request: i.request };
  }
  const next = nextRotationAt(i.rotation, i.issuedAt);
  if (next === undefined) return { action: "none" };
  return i.now >= next ? { action: "rotate", cause: "every" } : { action: "none", requeueAt: next };
}

/** When spec.rotation.every next rotates a key issued at issuedAt. */
export function nextRotationAt(rotation: EffectiveRotation | undefined, issuedAt: Date): Date | undefined {
  return rotation && new Date(issuedAt.getTime() + rotation.everyMs);
}
