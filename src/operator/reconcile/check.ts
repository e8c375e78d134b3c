// What plan's checks are made of (plan.ts): the facts they read, the decision each may reach, and the
// small helpers that word their events and conditions. Pure.
import type { V1Secret } from "@kubernetes/client-node";
import { LEVELS, type Level, type Scope } from "../../domain/scope/scope.ts";
import { tokenHint } from "../../domain/keys/token.ts";
import type { NamedScope } from "../../services/directory/named-scope.ts";
import type { Action, EventSpec } from "./actions.ts";
import type { ApiKey, EffectiveSpec, RotationStatus, SpecResult } from "../resource/apikey.ts";
import type { KeyRecord, KeyView, KeyWithToken } from "./keystore.ts";
import type { CustomerNames, NamespaceBinding } from "../resource/namespace-binding.ts";
import { formatRef } from "../resource/object-ref.ts";
import type { Readiness } from "../resource/status.ts";
import type { Workload } from "../rotation/workloads.ts";

export interface PlanInput {
  apiKey: ApiKey;
  /** resolveSpec(apiKey): the spec with its defaults, or why it is invalid. */
  spec: SpecResult;
  /** Which customers the ApiKey's namespace lets it name (namespace-binding.ts). */
  binding: NamespaceBinding;
  /**
   * The customers the binding is judged on, as the directory knows them: the spec's and those of the
   * keys this ApiKey manages, where they exist; none while the binding lists no customer to match.
   */
  customers: CustomerNames[];
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
  /** The key the rotation under way replaced (status.rotation.previousKey), while it still authenticates. */
  previousKey?: KeyWithToken | undefined;
  /**
   * The key that `key` replaced in a rotation made elsewhere (REST, a leak report) that this ApiKey has
   * not followed yet: the status still shows it, or a key it led to.
   */
  rotatedElsewhere?: KeyRecord | undefined;
  now: Date;
}

/** What one check decided: gather again now, settle (maybe looking again at a time), or retry after a backoff. */
export type Decision =
  | { next: "replan" }
  | { next: "done"; ready?: Readiness; requeueAt?: Date | undefined; rotation?: RotationStatus | undefined }
  | { next: "retry"; ready: Readiness };

/** An ApiKey whose spec is valid and whose scope exists. */
export type Facts = Omit<PlanInput, "spec" | "scope"> & { spec: EffectiveSpec; scope: Scope; owner: string };

/** Facts once the key exists. */
export type Keyed = Facts & { key: KeyWithToken };

/** One named step of plan: a decision ends the list; undefined lets the next check look. */
export type Check<T> = (input: T, actions: Action[]) => Decision | undefined;

export function normal(reason: string, message: string): EventSpec {
  return { type: "Normal", reason, message };
}

export function notReady(reason: Readiness["reason"], message: string): Readiness {
  return { status: "False", reason, message };
}

export function provisioned(f: Facts, key: KeyWithToken): Readiness {
  return { status: "True", reason: "Provisioned", message: `key ${tokenHint(key.token)} is in Secret ${secretRef(f)}` };
}

export function secretRef(f: Facts): string {
  return formatRef({ namespace: f.apiKey.metadata.namespace ?? "", name: f.spec.secret.name });
}

/** "customer acme, domain sip.acme.example": the spec's scope, up to (and without) `upTo` when given. */
export function scopeText(spec: EffectiveSpec, upTo?: Level): string {
  const parts: string[] = [];
  for (const field of LEVELS) {
    if (field === upTo) break;
    const value = spec[field];
    if (value !== undefined) parts.push(`${field} ${value}`);
  }
  return parts.join(", ");
}
