// What a plan asks apply to do, in order. Plain data: plan makes them, apply carries them out.
import type { V1Secret } from "@kubernetes/client-node";
import type { Policy } from "../../domain/policy/policy.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import type { BalanceOnPolicy } from "../../services/keys/keys.ts";
import type { ApiKeyStatus } from "../resource/apikey.ts";
import type { Workload } from "../rotation/workloads.ts";

/** A Kubernetes Event to record on the ApiKey once its action has succeeded. */
export interface EventSpec {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

export type Action = (
  | { type: "addFinalizer" }
  | { type: "removeFinalizer" }
  | { type: "provisionKey"; scope: Scope; name: string; active: boolean; policy: Policy | null }
  | { type: "claimKey"; id: number }
  | { type: "renameKey"; id: number; scope: Scope; name: string }
  | { type: "setKeyActive"; id: number; scope: Scope; active: boolean }
  /** Puts the spec's policy on the key; `keep` leaves the live balance of credits as it is. */
  | { type: "setKeyPolicy"; id: number; scope: Scope; policy: Policy | null; balance: BalanceOnPolicy }
  | { type: "deleteKey"; id: number; scope: Scope }
  | { type: "releaseKey"; id: number }
  | { type: "createSecret"; secret: V1Secret }
  | { type: "replaceSecret"; secret: V1Secret }
  | { type: "deleteSecret"; name: string; uid: string }
  | { type: "patchStatus"; status: ApiKeyStatus }
  /**
   * Records a rotation before it is made (or one made elsewhere, before it is followed), guarded by the
   * resourceVersion it was planned from.
   */
  | { type: "beginRotation"; status: ApiKeyStatus; resourceVersion: string }
  | { type: "rotateKey"; id: number; scope: Scope; gracePeriodSeconds: number }
  | { type: "restartWorkload"; kind: Workload["kind"]; name: string; marker: string }
  /** Deletes the key a rotation replaced; one that has expired already is retired as it is. */
  | { type: "retireKey"; id: number; scope: Scope }
  | { type: "recordEvent" }
) & { event?: EventSpec };

export type ActionType = Action["type"];

/** An action as a log may show it: its type and names, never a token. */
export function describeAction(action: Action): Record<string, unknown> {
  switch (action.type) {
    case "createSecret":
    case "replaceSecret":
      return { action: action.type, secret: action.secret.metadata?.name };
    case "patchStatus":
      return { action: action.type, ready: action.status.conditions?.[0]?.status, reason: action.status.conditions?.[0]?.reason };
    case "beginRotation":
      return { action: action.type, previousKeyDbId: action.status.rotation?.previousKey?.id };
    case "restartWorkload":
      return { action: action.type, workload: `${action.kind}/${action.name}` };
    case "provisionKey":
    case "renameKey":
      return { action: action.type, key: action.name };
    case "recordEvent":
      return { action: action.type, reason: action.event?.reason };
    default: {
      const { event: _event, ...rest } = action;
      return { action: action.type, ...("id" in rest ? { keyDbId: rest.id } : {}), ...("name" in rest ? { name: rest.name } : {}) };
    }
  }
}
