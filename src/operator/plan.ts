// plan(input): what to do about one ApiKey, from what gather saw. Pure: no I/O, the clock comes in the
// input. Each step is a small named check in an ordered list; the first to reach a decision ends the
// list, and the checks before it may have added actions.
import type { V1Secret } from "@kubernetes/client-node";
import { LEVELS, sameScope, type Level, type Scope } from "../domain/scope.ts";
import { tokenHint } from "../domain/token.ts";
import type { NamedScope } from "../services/named-scope.ts";
import type { Action, EventSpec } from "./actions.ts";
import { formatRef, refOf } from "./object-ref.ts";
import {
  DEFAULT_GRACE_PERIOD_MS, FINALIZER, ROTATE_ANNOTATION, type ApiKey, type ApiKeyStatus, type DeletionPolicy, type EffectiveRotation,
  type EffectiveSpec, type RotationStatus, type SpecResult,
} from "./apikey.ts";
import type { KeyView, KeyWithToken } from "./keystore.ts";
import { desiredSecret, isOwnedBy, secretChange, secretReplacement } from "./secret.ts";
import { conditions, kubeTime, readyConditionOf, sameJson, type Readiness } from "./status.ts";
import { decideRotation, nextRotationAt, type RotationDecision } from "./rotation.ts";
import { describeWorkload, restartsFor, type Workload } from "./workloads.ts";

export interface PlanInput {
  apiKey: ApiKey;
  /** resolveSpec(apiKey): the spec with its defaults, or why it is invalid. */
  spec: SpecResult;
  /** The spec's scope in keyplane's directory; undefined when not looked up (invalid spec, deletion). */
  scope: NamedScope | undefined;
  /** The live key of the spec's scope and keyName, whoever manages it. */
  key: KeyWithToken | undefined;
  /** Every live key this ApiKey manages (the one above among them, once it is this ApiKey's). */
  managedKeys: KeyView[];
  /** The Secret of the spec's name, whoever owns it. */
  secret: V1Secret | undefined;
  /** The Secrets of the namespace that this ApiKey owns, whatever their names. */
  ownedSecrets: V1Secret[];
  /** The namespace's Deployments, StatefulSets and DaemonSets; gathered only for spec.rotation.restartWorkloads. */
  workloads: Workload[];
  now: Date;
}

/** done: nothing more until something changes; retry: again after a backoff; replan: gather again now. */
export type Next = "done" | "retry" | "replan";

export interface Plan {
  actions: Action[];
  next: Next;
  /** The status the ApiKey should show; none while it is deleted, or before a replan. */
  status?: ApiKeyStatus;
  /** When to look again though nothing changes: a rotation due, a grace period's end. */
  requeueAt?: Date;
}

type Decision =
  | { next: "replan" }
  | { next: "done"; ready?: Readiness; requeueAt?: Date | undefined; rotation?: RotationStatus | undefined }
  | { next: "retry"; ready: Readiness };

/** An ApiKey whose spec is valid and whose scope exists. */
type Facts = Omit<PlanInput, "spec" | "scope"> & { spec: EffectiveSpec; scope: Scope; owner: string };

/** Facts once the key exists. */
type Keyed = Facts & { key: KeyWithToken };

type StatusKeyType = NonNullable<ApiKeyStatus["key"]>["type"];

type Check<T> = (input: T, actions: Action[]) => Decision | undefined;

export function plan(input: PlanInput): Plan {
  const actions: Action[] = [];
  if (input.apiKey.metadata.deletionTimestamp) return settle(input, actions, run(finalizing, input, actions));
  const early = run(admitting, input, actions);
  if (early || !input.spec.ok || !input.scope?.found) return settle(input, actions, early ?? { next: "done" });
  const facts: Facts = { ...input, spec: input.spec.spec, scope: input.scope.scope, owner: formatRef(refOf(input.apiKey)) };
  return settle(input, actions, run(reconciling, facts, actions) ?? { next: "done" });
}

function run<T>(checks: Check<T>[], input: T, actions: Action[]): Decision | undefined {
  for (const check of checks) {
    const decision = check(input, actions);
    if (decision) return decision;
  }
  return undefined;
}

// --- An ApiKey being deleted -------------------------------------------------------------------

const finalizing: Check<PlanInput>[] = [
  function letsGoWithoutFinalizer(i) {
    return hasFinalizer(i.apiKey) ? undefined : { next: "done" };
  },
  function deletesOrReleasesItsKeys(i, actions) {
    for (const key of i.managedKeys) actions.push(dropKey(key, policyOf(i)));
    return undefined;
  },
  function deletesItsSecrets(i, actions) {
    const owned = [...(i.secret && isOwnedBy(i.secret, i.apiKey.metadata.uid) ? [i.secret] : []), ...i.ownedSecrets];
    const byUid = new Map(owned.map((s) => [s.metadata?.uid ?? "", s]));
    for (const secret of byUid.values()) actions.push(deleteSecret(i.apiKey, secret));
    return undefined;
  },
  function removesFinalizer(_i, actions) {
    actions.push({ type: "removeFinalizer" });
    return { next: "done" };
  },
];

// --- Before anything is provisioned ------------------------------------------------------------

const admitting: Check<PlanInput>[] = [
  function reportsInvalidSpec(i) {
    return i.spec.ok ? undefined : { next: "done", ready: notReady("InvalidSpec", i.spec.message) };
  },
  function addsFinalizer(i, actions) {
    if (!hasFinalizer(i.apiKey)) actions.push({ type: "addFinalizer" });
    return undefined;
  },
  function waitsForScope(i) {
    if (!i.spec.ok || !i.scope || i.scope.found) return undefined;
    const { missing, ref } = i.scope;
    const within = missing === "customer" ? "" : ` (within ${scopeText(i.spec.spec, missing)})`;
    return { next: "retry", ready: notReady("ScopeNotFound", `${missing} "${ref}" does not exist in keyplane${within}`) };
  },
];

// --- The key and its Secret --------------------------------------------------------------------

const reconciling: Check<Facts>[] = [
  function refusesForeignSecret(f) {
    if (!f.secret || isOwnedBy(f.secret, f.apiKey.metadata.uid)) return undefined;
    return { next: "retry", ready: notReady("SecretConflict", `Secret ${secretRef(f)} exists and is not owned by this ApiKey: keyplane leaves it untouched`) };
  },
  function refusesKeyOfAnother(f) {
    if (!f.key || f.key.managedBy === null || f.key.managedBy === f.owner) return undefined;
    return { next: "retry", ready: notReady("KeyConflict", `key "${f.key.name}" of ${scopeText(f.spec)} is managed by ApiKey ${f.key.managedBy}`) };
  },
  function restoresRenamedKey(f, actions) {
    if (f.key) return undefined;
    const renamed = f.managedKeys.find((k) => k.replacedBy === null && sameScope(k.scope, f.scope));
    if (!renamed) return undefined;
    actions.push({ type: "renameKey", id: renamed.id, scope: renamed.scope, name: f.spec.keyName,
      event: normal("RenamedKey", `Renamed key "${renamed.name}" to "${f.spec.keyName}"`) });
    return { next: "replan" };
  },
  function provisionsKey(f, actions) {
    if (f.key) return undefined;
    actions.push({ type: "provisionKey", scope: f.scope, name: f.spec.keyName, active: f.spec.active,
      event: normal("ProvisionedKey", `Provisioned key "${f.spec.keyName}" for ${scopeText(f.spec)}`) });
    return { next: "replan" };
  },
  function adoptsKeyMadeThroughRest(f, actions) {
    if (!f.key || f.key.managedBy !== null) return undefined;
    actions.push({ type: "claimKey", id: f.key.id, event: normal("AdoptedKey", `Adopted key "${f.key.name}", made through the REST API`) });
    return { next: "replan" };
  },
  function keepsActiveAsSpecified(f, actions) {
    if (!f.key || f.key.active === f.spec.active) return undefined;
    const [reason, verb] = f.spec.active ? ["ActivatedKey", "Activated"] : ["DeactivatedKey", "Deactivated"];
    actions.push({ type: "setKeyActive", id: f.key.id, scope: f.key.scope, active: f.spec.active,
      event: normal(reason, `${verb} key "${f.key.name}": the spec says active: ${f.spec.active}`) });
    return undefined;
  },
  function startsRotation(f, actions) {
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
  },
  function rotatesKey(f, actions) {
    const previous = f.apiKey.status?.rotation?.previousKey;
    if (!previous || f.key?.id !== previous.id) return undefined;
    const gracePeriodSeconds = Math.max(0, Math.floor((Date.parse(previous.expiresAt) - f.now.getTime()) / 1000));
    actions.push({ type: "rotateKey", id: f.key.id, scope: f.key.scope, gracePeriodSeconds,
      event: normal("Rotated", `Rotated key "${f.key.name}": a new key replaces ${previous.hint}, which works until ${previous.expiresAt} at the latest`) });
    return { next: "replan" };
  },
  function writesSecret(f, actions) {
    if (!f.key) return undefined;
    const desired = desiredSecret(f.apiKey, f.spec, f.key.token);
    if (!f.secret) {
      actions.push({ type: "createSecret", secret: desired, event: normal("CreatedSecret", `Created Secret ${secretRef(f)}`) });
      return undefined;
    }
    const change = secretChange(f.secret, desired);
    if (change === "update") {
      actions.push({ type: "replaceSecret", secret: secretReplacement(f.secret, desired), event: normal("UpdatedSecret", `Updated Secret ${secretRef(f)}`) });
    } else if (change === "recreate") {
      actions.push(
        { type: "deleteSecret", name: f.spec.secret.name, uid: f.secret.metadata?.uid ?? "" },
        { type: "createSecret", secret: desired, event: normal("RecreatedSecret", `Recreated Secret ${secretRef(f)}: its type or immutable data differed`) },
      );
    }
    return undefined;
  },
  function dropsKeysNoLongerAskedFor(f, actions) {
    // A key a rotation replaced ends by itself, at the latest when its grace period does.
    for (const key of f.managedKeys) if (key.id !== f.key?.id && key.replacedBy === null) actions.push(dropKey(key, f.spec.deletionPolicy));
    return undefined;
  },
  function deletesSecretsNoLongerAskedFor(f, actions) {
    for (const secret of f.ownedSecrets) {
      if (secret.metadata?.name !== f.spec.secret.name) actions.push(deleteSecret(f.apiKey, secret));
    }
    return undefined;
  },
  function finishesRotation(f, actions) {
    const recorded = f.apiKey.status?.rotation;
    const previous = recorded?.previousKey;
    if (!f.key || !previous) return undefined;
    // Each workload that reads the Secret restarts once, with the rotation's own marker (the Secret
    // already holds the new key: it was written above).
    const marker = recorded.lastRotationTime ?? previous.expiresAt;
    const restarts = f.spec.rotation?.restartWorkloads ? restartsFor(f.workloads, f.spec.secret.name, marker) : undefined;
    for (const workload of restarts?.due ?? []) {
      const { kind, object } = workload;
      actions.push({ type: "restartWorkload", kind, name: object.metadata?.name ?? "", marker,
        event: normal("RestartedWorkload", `Restarted ${describeWorkload(workload)}: its pods read Secret ${secretRef(f)}, which holds the new key`) });
    }
    const waitingFor = restarts ? [...restarts.due, ...restarts.rollingOut] : [];
    const decision = rotationDecision({ ...f, key: f.key }, restarts !== undefined && waitingFor.length === 0);
    if (decision.action === "retire") {
      actions.push({ type: "retireKey", id: previous.id, scope: f.key.scope, event: retiredEvent(previous.hint, decision.cause, waitingFor, secretRef(f)) });
      const { previousKey: _retired, ...rotation } = recorded;
      return { next: "done", ready: provisioned(f, f.key), rotation, requeueAt: nextRotationAt(f.spec.rotation, f.key.issuedAt) };
    }
    // The same message while workloads roll out one by one: each would otherwise cost a status write.
    const waiting = waitingFor.length > 0 ? "waiting for the restarted workloads to roll out; " : "";
    const progress = { reason: "Rotating", message: `${waiting}the replaced key ${previous.hint} is retired by ${previous.expiresAt} at the latest` };
    return { next: "done", ready: { ...provisioned(f, f.key), progress }, requeueAt: decision.action === "await" ? decision.requeueAt : undefined };
  },
  function isReady(f) {
    if (!f.key) return undefined;
    // No rotation is under way (and one due has started above): a request to record, or the next one's time.
    const decision = rotationDecision({ ...f, key: f.key });
    const rotation = decision.action === "record" ? { ...f.apiKey.status?.rotation, lastRequest: decision.request } : undefined;
    return { next: "done", ready: provisioned(f, f.key), rotation, requeueAt: decision.action === "none" ? decision.requeueAt : undefined };
  },
];

function provisioned(f: Facts, key: KeyWithToken): Readiness {
  return { status: "True", reason: "Provisioned", message: `key ${tokenHint(key.token)} is in Secret ${secretRef(f)}` };
}

// --- Rotation ----------------------------------------------------------------------------------

/** The value of the keyplane.dev/rotate annotation, if any. */
function rotateRequest(apiKey: ApiKey): string | undefined {
  return apiKey.metadata.annotations?.[ROTATE_ANNOTATION];
}

function rotationDecision(f: Keyed, rolledOut = false): RotationDecision {
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

// --- Status and warnings -----------------------------------------------------------------------

/**
 * What to show when applying a plan failed (the API server or the database answered an error):
 * Ready=False, reason Error, written by the same author as every other status.
 */
export function failurePlan(input: PlanInput, message: string): Plan {
  return settle(input, [], { next: "retry", ready: notReady("Error", message) });
}

/** Adds the status write (when the status changed) and a warning when the ApiKey turns not Ready. */
function settle(input: PlanInput, actions: Action[], decision: Decision | undefined): Plan {
  const requeueAt = decision?.next === "done" ? decision.requeueAt : undefined;
  if (!decision || decision.next === "replan" || !decision.ready) return { actions, next: decision?.next ?? "done", ...(requeueAt ? { requeueAt } : {}) };
  const { ready } = decision;
  const current = input.apiKey.status;
  const owner = formatRef(refOf(input.apiKey));
  const key = input.key && input.key.managedBy === owner ? input.key : undefined;
  const status: ApiKeyStatus = {
    ...(input.apiKey.metadata.generation !== undefined ? { observedGeneration: input.apiKey.metadata.generation } : {}),
    conditions: conditions(current, ready, input.apiKey.metadata.generation, input.now),
    ...(key ? { key: { id: key.id, type: key.type as StatusKeyType, hint: tokenHint(key.token) } } : {}),
    ...(ready.status === "True" && input.spec.ok ? { secretName: input.spec.spec.secret.name } : {}),
    ...rotationStatus((decision.next === "done" ? decision.rotation : undefined) ?? current?.rotation, input.spec.ok ? input.spec.spec.rotation : undefined, key),
  };
  const previous = readyConditionOf(current);
  if (ready.status === "False" && (previous?.status !== "False" || previous.reason !== ready.reason)) {
    const reason = ready.reason === "Error" ? "ReconcileError" : ready.reason;
    actions.push({ type: "recordEvent", event: { type: "Warning", reason, message: ready.message } });
  }
  if (!sameJson(status, current)) actions.push({ type: "patchStatus", status });
  return { actions, next: decision.next, status, ...(requeueAt ? { requeueAt } : {}) };
}

// --- Helpers -------------------------------------------------------------------------------------

/** status.rotation: what was recorded, with the next rotation of the current key. */
function rotationStatus(recorded: RotationStatus | undefined, rotation: EffectiveRotation | undefined, key: KeyWithToken | undefined): Pick<ApiKeyStatus, "rotation"> {
  const next = key && nextRotationAt(rotation, key.issuedAt);
  const { nextRotationTime: _stale, ...kept } = recorded ?? {};
  const status = { ...kept, ...(next ? { nextRotationTime: kubeTime(next) } : {}) };
  return Object.keys(status).length > 0 ? { rotation: status } : {};
}

function hasFinalizer(apiKey: ApiKey): boolean {
  return (apiKey.metadata.finalizers ?? []).includes(FINALIZER);
}

function notReady(reason: Readiness["reason"], message: string): Readiness {
  return { status: "False", reason, message };
}

function normal(reason: string, message: string): EventSpec {
  return { type: "Normal", reason, message };
}

/** The deletion policy, also of a spec that no longer validates: its own field when that is valid. */
function policyOf(i: PlanInput): DeletionPolicy {
  if (i.spec.ok) return i.spec.spec.deletionPolicy;
  return (i.apiKey.spec as { deletionPolicy?: unknown } | undefined)?.deletionPolicy === "Retain" ? "Retain" : "Delete";
}

function dropKey(key: KeyView, policy: DeletionPolicy): Action {
  return policy === "Delete"
    ? { type: "deleteKey", id: key.id, scope: key.scope, event: normal("DeletedKey", `Deleted key "${key.name}" (deletionPolicy Delete)`) }
    : { type: "releaseKey", id: key.id, event: normal("ReleasedKey", `Released key "${key.name}": it stays in keyplane (deletionPolicy Retain)`) };
}

function deleteSecret(apiKey: ApiKey, secret: V1Secret): Action {
  const name = secret.metadata?.name ?? "";
  return { type: "deleteSecret", name, uid: secret.metadata?.uid ?? "", event: normal("DeletedSecret", `Deleted Secret ${formatRef({ namespace: apiKey.metadata.namespace ?? "", name })}`) };
}

function secretRef(f: Facts): string {
  return formatRef({ namespace: f.apiKey.metadata.namespace ?? "", name: f.spec.secret.name });
}

/** "customer acme, domain sip.acme.example": the spec's scope, up to (and without) `upTo` when given. */
function scopeText(spec: EffectiveSpec, upTo?: Level): string {
  const parts: string[] = [];
  for (const field of LEVELS) {
    if (field === upTo) break;
    const value = spec[field];
    if (value !== undefined) parts.push(`${field} ${value}`);
  }
  return parts.join(", ");
}
