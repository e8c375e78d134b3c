// plan(input): what to do about one ApiKey, from what gather saw. Pure: no I/O, the clock comes in the
// input. Each step is a small named check in an ordered list; the first to reach a decision ends the
// list, and the checks before it may have added actions.
import type { V1Secret } from "@kubernetes/client-node";
import { sameScope } from "../../domain/scope/scope.ts";
import { tokenHint } from "../../domain/keys/token.ts";
import type { Action } from "./actions.ts";
import { FINALIZER, type ApiKey, type ApiKeyStatus, type DeletionPolicy, type EffectiveRotation, type RotationStatus } from "../resource/apikey.ts";
import { normal, notReady, provisioned, scopeText, secretRef, type Check, type Decision, type Facts, type PlanInput } from "./check.ts";
import type { KeyView, KeyWithToken } from "./keystore.ts";
import { allowsCustomer, allowsKeysOf, notAllowedMessage } from "../resource/namespace-binding.ts";
import { formatRef, refOf } from "../resource/object-ref.ts";
import { finishesRotation, followsRotationMadeElsewhere, retiresNow, rotatesKey, rotationDecision, startsRotation } from "../rotation/plan-rotation.ts";
import { resetsBalance } from "../resource/policy-spec.ts";
import { nextRotationAt } from "../rotation/rotation.ts";
import { desiredSecret, isOwnedBy, secretChange, secretReplacement } from "../resource/secret.ts";
import { conditions, kubeTime, readyConditionOf, sameJson } from "../resource/status.ts";

export type { PlanInput };

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

type StatusKeyType = NonNullable<ApiKeyStatus["key"]>["type"];

export function plan(input: PlanInput): Plan {
  const actions: Action[] = [];
  if (input.apiKey.metadata.deletionTimestamp) return settle(input, actions, run(finalizing, input, actions));
  const early = run(admitting, input, actions);
  // Refused by its namespace, the ApiKey shows no key: none is kept for it until the namespace lists the customer.
  if (early?.next === "retry" && early.ready.reason === "NamespaceNotAllowed") return settle({ ...input, key: undefined, rotatedElsewhere: undefined }, actions, early);
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
    // A key of a customer the namespace does not list (any more) stays as it is, claim and all.
    for (const key of i.managedKeys) if (allowsKeysOf(i.binding, key.scope.tenantId, i.customers)) actions.push(dropKey(key, policyOf(i)));
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
  // Before the finalizer and before the scope is judged: nothing is done for an ApiKey its namespace
  // may not have, and its answer is the same whether the customer exists or not.
  function refusesCustomerNotListedByNamespace(i) {
    if (!i.spec.ok || i.binding.kind !== "listed" || allowsCustomer(i.binding, i.spec.spec.customer, i.customers)) return undefined;
    return { next: "retry", ready: notReady("NamespaceNotAllowed", notAllowedMessage(i.binding, i.spec.spec.customer)) };
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
    actions.push({ type: "provisionKey", scope: f.scope, name: f.spec.keyName, active: f.spec.active, policy: f.spec.policy,
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
  function keepsPolicyAsSpecified(f, actions) {
    if (!f.key || sameJson(f.key.policy, f.spec.policy)) return undefined;
    // The live balance is set again only when credits.remaining itself differs: credits spent are no drift.
    const balance = resetsBalance(f.key.policy, f.spec.policy) ? "reset" : "keep";
    const kept = balance === "keep" ? ", its credits' balance kept" : "";
    actions.push({ type: "setKeyPolicy", id: f.key.id, scope: f.key.scope, policy: f.spec.policy, balance,
      event: normal("UpdatedKeyPolicy", `Set the policy of key "${f.key.name}" as the spec says${kept}`) });
    return undefined;
  },
  followsRotationMadeElsewhere,
  startsRotation,
  rotatesKey,
  function writesSecret(f, actions) {
    if (!f.key) return undefined;
    // While a rotation is under way an envoy-gateway Secret holds the replaced key too, until it is retired.
    const previous = retiresNow(f) ? undefined : f.previousKey;
    const desired = desiredSecret(f.apiKey, f.spec, f.key, previous);
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
    // A key a rotation replaced ends by itself, at the latest when its grace period does. A key of a
    // customer the namespace no longer lists stays: the operator may not change it.
    for (const key of f.managedKeys) {
      if (key.id !== f.key?.id && key.replacedBy === null && allowsKeysOf(f.binding, key.scope.tenantId, f.customers)) actions.push(dropKey(key, f.spec.deletionPolicy));
    }
    return undefined;
  },
  function deletesSecretsNoLongerAskedFor(f, actions) {
    for (const secret of f.ownedSecrets) {
      if (secret.metadata?.name !== f.spec.secret.name) actions.push(deleteSecret(f.apiKey, secret));
    }
    return undefined;
  },
  finishesRotation,
  function isReady(f) {
    if (!f.key) return undefined;
    // No rotation is under way (and one due has started above): a request to record, or the next one's time.
    const decision = rotationDecision({ ...f, key: f.key });
    const rotation = decision.action === "record" ? { ...f.apiKey.status?.rotation, lastRequest: decision.request } : undefined;
    return { next: "done", ready: provisioned(f, f.key), rotation, requeueAt: decision.action === "none" ? decision.requeueAt : undefined };
  },
];

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
  // A rotation made elsewhere and not yet followed: the status keeps showing the replaced key until the
  // rotation is recorded, or a failure reported in between would hide the rotation from the next reconcile.
  const unfollowed = input.rotatedElsewhere !== undefined && !current?.rotation?.previousKey;
  const key = !unfollowed && input.key?.managedBy === owner ? input.key : undefined;
  const shownKey = key ? { id: key.id, type: key.type as StatusKeyType, hint: tokenHint(key.token) } : unfollowed ? current?.key : undefined;
  const status: ApiKeyStatus = {
    ...(input.apiKey.metadata.generation !== undefined ? { observedGeneration: input.apiKey.metadata.generation } : {}),
    conditions: conditions(current, ready, input.apiKey.metadata.generation, input.now),
    ...(shownKey ? { key: shownKey } : {}),
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
