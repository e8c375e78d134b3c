// The rotation steps of plan (docs/operator.md, "Rotation"): a rotation made elsewhere followed, one
// started, made by the key store, and finished (restarts, then the replaced key retired). Each step
// starts from what it reads, so a rotation stopped anywhere is finished by the next reconcile. Pure.
import { tokenHint } from "../../domain/keys/token.ts";
import type { EventSpec } from "../reconcile/actions.ts";
import { DEFAULT_GRACE_PERIOD_MS, ROTATE_ANNOTATION, type ApiKey, type RotationStatus } from "../resource/apikey.ts";
import { normal, provisioned, secretRef, type Check, type Facts, type Keyed } from "../reconcile/check.ts";
import { decideRotation, nextRotationAt, type RotationDecision } from "./rotation.ts";
import { kubeTime } from "../resource/status.ts";
import { describeWorkload, restartsFor, type Restarts, type Workload } from "./workloads.ts";

/**
 * A rotation made elsewhere (through REST, or by a leak report's `rotate`) is recorded as one of this
 * ApiKey's own, with the replaced key's grace period as that rotation gave it, and then finished as
 * one: the Secret, the restarts, the replaced key retired. The new key's issue time is the rotation's
 * time and its restart marker: any reconcile that records it records the same value.
 */
export const followsRotationMadeElsewhere: Check<Facts> = (f, actions) => {
  const replaced = f.rotatedElsewhere;
  if (!f.key || !replaced || f.apiKey.status?.rotation?.previousKey) return undefined;
  // A replaced key deleted since has nothing left of its grace period.
  const ends = replaced.deleted || replaced.expiresAt === null || replaced.expiresAt < f.now ? f.now : replaced.expiresAt;
  const expiresAt = kubeTime(ends);
  const rotation: RotationStatus = {
    ...f.apiKey.status?.rotation,
    lastRotationTime: kubeTime(f.key.issuedAt),
    previousKey: { id: replaced.id, hint: replaced.hint, expiresAt },
  };
  actions.push({ type: "beginRotation", status: { ...f.apiKey.status, rotation }, resourceVersion: f.apiKey.metadata.resourceVersion ?? "",
    event: normal("Rotated", `Key "${f.key.name}" was rotated outside this ApiKey: a new key replaces ${replaced.hint}, which works until ${expiresAt} at the latest`) });
  return { next: "replan" };
};

export const startsRotation: Check<Facts> = (f, actions) => {
  if (!f.key || f.apiKey.status?.rotation?.previousKey) return undefined;
  const decision = rotationDecision({ ...f, key: f.key });
  if (decision.action !== "rotate") return undefined;
  // Recorded before the key store rotates, guarded by the resourceVersion read: whatever stops the
  // operator from here on, the next reconcile finishes this rotation rather than starting another.
  const graceMs = f.spec.rotation?.gracePeriodMs ?? DEFAULT_GRACE_PERIOD_MS;
  const rotation: RotationStatus = {
    ...f.apiKey.status?.rotation,
    lastRotationTime: kubeTime(f.now),
    ...(decision.cause === "request" ? { lastRequest: rotateRequest(f.apiKey) } : {}),
    previousKey: { id: f.key.id, hint: tokenHint(f.key.token), expiresAt: kubeTime(new Date(f.now.getTime() + graceMs)) },
  };
  actions.push({ type: "beginRotation", status: { ...f.apiKey.status, rotation }, resourceVersion: f.apiKey.metadata.resourceVersion ?? "" });
  return { next: "replan" };
};

export const rotatesKey: Check<Facts> = (f, actions) => {
  const previous = f.apiKey.status?.rotation?.previousKey;
  if (!previous || f.key?.id !== previous.id) return undefined;
  const gracePeriodSeconds = Math.max(0, Math.floor((Date.parse(previous.expiresAt) - f.now.getTime()) / 1000));
  actions.push({ type: "rotateKey", id: f.key.id, scope: f.key.scope, gracePeriodSeconds,
    event: normal("Rotated", `Rotated key "${f.key.name}": a new key replaces ${previous.hint}, which works until ${previous.expiresAt} at the latest`) });
  return { next: "replan" };
};

/** Where the rotation under way stands, once the key store has made the new key. */
export interface RotationEnd {
  recorded: RotationStatus;
  previous: NonNullable<RotationStatus["previousKey"]>;
  /** The restart marker: one value per rotation. */
  marker: string;
  /** Without spec.rotation.restartWorkloads, none. */
  restarts: Restarts | undefined;
  /** The workloads still to restart or roll out. */
  waitingFor: Workload[];
  decision: RotationDecision;
}

export function rotationEnd(f: Facts): RotationEnd | undefined {
  const recorded = f.apiKey.status?.rotation;
  const previous = recorded?.previousKey;
  if (!f.key || !recorded || !previous || f.key.id === previous.id) return undefined;
  const marker = recorded.lastRotationTime ?? previous.expiresAt;
  // Each workload that reads the Secret restarts once, with the rotation's own marker.
  const restarts = f.spec.rotation?.restartWorkloads ? restartsFor(f.workloads, f.spec.secret.name, marker) : undefined;
  const waitingFor = restarts ? [...restarts.due, ...restarts.rollingOut] : [];
  const decision = rotationDecision({ ...f, key: f.key }, restarts !== undefined && waitingFor.length === 0);
  return { recorded, previous, marker, restarts, waitingFor, decision };
}

/** Whether this plan retires the replaced key: the Secret then holds the new key alone. */
export function retiresNow(f: Facts): boolean {
  return rotationEnd(f)?.decision.action === "retire";
}

export const finishesRotation: Check<Facts> = (f, actions) => {
  const end = rotationEnd(f);
  if (!f.key || !end) return undefined;
  const { recorded, previous, marker, restarts, waitingFor, decision } = end;
  for (const workload of restarts?.due ?? []) {
    const { kind, object } = workload;
    actions.push({ type: "restartWorkload", kind, name: object.metadata?.name ?? "", marker,
      event: normal("RestartedWorkload", `Restarted ${describeWorkload(workload)}: its pods read Secret ${secretRef(f)}, which holds the new key`) });
  }
  if (decision.action === "retire") {
    actions.push({ type: "retireKey", id: previous.id, scope: f.key.scope, event: retiredEvent(previous.hint, decision.cause, waitingFor, secretRef(f)) });
    const { previousKey: _retired, ...rotation } = recorded;
    return { next: "done", ready: provisioned(f, f.key), rotation, requeueAt: nextRotationAt(f.spec.rotation, f.key.issuedAt) };
  }
  // The same message while workloads roll out one by one: each would otherwise cost a status write.
  const waiting = waitingFor.length > 0 ? "waiting for the restarted workloads to roll out; " : "";
  const progress = { reason: "Rotating", message: `${waiting}the replaced key ${previous.hint} is retired by ${previous.expiresAt} at the latest` };
  return { next: "done", ready: { ...provisioned(f, f.key), progress }, requeueAt: decision.action === "await" ? decision.requeueAt : undefined };
};

/** The value of the keyplane.dev/rotate annotation, if any. */
function rotateRequest(apiKey: ApiKey): string | undefined {
  return apiKey.metadata.annotations?.[ROTATE_ANNOTATION];
}

export function rotationDecision(f: Keyed, rolledOut = false): RotationDecision {
  return decideRotation({
    rotation: f.spec.rotation,
    request: rotateRequest(f.apiKey),
    status: f.apiKey.status?.rotation,
    provisioned: f.apiKey.status?.key !== undefined,
    issuedAt: f.key.issuedAt,
    rolledOut,
    now: f.now,
  });
}

function retiredEvent(hint: string, cause: "rolledOut" | "gracePeriodEnded", waitingFor: Workload[], secret: string): EventSpec {
  if (cause === "rolledOut") return normal("RetiredKey", `Retired key ${hint}: every workload that reads Secret ${secret} has rolled out with the new key`);
  if (waitingFor.length === 0) return normal("RetiredKey", `Retired key ${hint}: its grace period ended`);
  return { type: "Warning", reason: "RetiredKey", message: `Retired key ${hint}: its grace period ended before ${waitingFor.map(describeWorkload).join(", ")} rolled out` };
}
