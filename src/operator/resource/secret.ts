// The Secret an ApiKey asks for, and how an existing Secret compares with it. Pure.
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { API_VERSION, KIND, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type EffectiveSpec } from "./apikey.ts";

export const SECRET_TYPE = "Opaque";

interface Owner {
  metadata: { name?: string | undefined; namespace?: string | undefined; uid?: string | undefined };
}

export function ownerReference(apiKey: Owner): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: apiKey.metadata.name ?? "",
    uid: apiKey.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether `secret` belongs to the ApiKey of this uid: only then may keyplane touch it. */
export function isOwnedBy(secret: V1Secret, uid: string | undefined): boolean {
  return uid !== undefined && (secret.metadata?.ownerReferences ?? []).some((ref) => ref.uid === uid);
}

/** A key the Secret holds: its numeric id and its token. */
export interface HeldKey {
  id: number;
  token: string;
}

/**
 * The Secret's data: format `keyplane`, the current key's token under spec.secret.key; `envoy-gateway`,
 * each live key's numeric id to its token (the current key, and the one it replaced while that still
 * authenticates), the form Envoy Gateway's SecurityPolicy apiKeyAuth.credentialRefs reads. Envoy checks
 * nothing but that list, so while the spec says `active: false` it is empty.
 */
export function secretData(spec: EffectiveSpec, current: HeldKey, previous?: HeldKey): Record<string, string> {
  const base64 = (token: string) => Buffer.from(token, "utf8").toString("base64");
  if (spec.secret.format === "keyplane") return { [spec.secret.key]: base64(current.token) };
  if (!spec.active) return {};
  const held = previous && previous.id !== current.id ? [previous, current] : [current];
  return Object.fromEntries(held.map((k) => [String(k.id), base64(k.token)]));
}

export function desiredSecret(apiKey: Owner, spec: EffectiveSpec, current: HeldKey, previous?: HeldKey): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: spec.secret.name,
      namespace: apiKey.metadata.namespace,
      // The managed-by label comes last: it is what the operator's watch selects, so a spec cannot drop it.
      labels: { ...spec.secret.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations: { ...spec.secret.annotations },
      ownerReferences: [ownerReference(apiKey)],
    },
    type: SECRET_TYPE,
    data: secretData(spec, current, previous),
  };
}

export type SecretChange = "none" | "update" | "recreate";

/**
 * What it takes to make `actual` what `desired` says. keyplane owns the Secret whole: its type, data,
 * labels and annotations are exactly the ApiKey's. Type and an immutable Secret's data can only change
 * by recreating it.
 */
export function secretChange(actual: V1Secret, desired: V1Secret): SecretChange {
  const typeDiffers = (actual.type ?? SECRET_TYPE) !== desired.type;
  const dataDiffers = !sameMap(actual.data, desired.data);
  if (typeDiffers || (actual.immutable === true && dataDiffers)) return "recreate";
  const ours = desired.metadata?.ownerReferences?.[0];
  const hasOurs = (actual.metadata?.ownerReferences ?? []).some((ref) => ours !== undefined && sameOwner(ref, ours));
  const differs =
    dataDiffers ||
    !hasOurs ||
    !sameMap(actual.metadata?.labels, desired.metadata?.labels) ||
    !sameMap(actual.metadata?.annotations, desired.metadata?.annotations);
  return differs ? "update" : "none";
}

/**
 * The body that replaces `actual` with `desired`: guarded by resourceVersion, and keeping what others
 * may rightly have put there (their owner references and finalizers, immutability).
 */
export function secretReplacement(actual: V1Secret, desired: V1Secret): V1Secret {
  const ours = desired.metadata?.ownerReferences ?? [];
  const others = (actual.metadata?.ownerReferences ?? []).filter((ref) => !ours.some((o) => o.uid === ref.uid));
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      resourceVersion: actual.metadata?.resourceVersion,
      ownerReferences: [...others, ...ours],
      finalizers: actual.metadata?.finalizers,
    },
    immutable: actual.immutable,
  };
}

function sameOwner(a: V1OwnerReference, b: V1OwnerReference): boolean {
  return a.uid === b.uid && a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name &&
    a.controller === b.controller && a.blockOwnerDeletion === b.blockOwnerDeletion;
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const x = a ?? {};
  const y = b ?? {};
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && x[k] === y[k]);
}
