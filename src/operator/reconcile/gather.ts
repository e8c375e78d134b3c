// gather: reads what plan needs to know about one ApiKey: the resource, its namespace's binding, its
// Secret, the stored key.
import type { V1Namespace, V1Secret } from "@kubernetes/client-node";
import { resolveSpec, type ApiKey, type SpecResult } from "../resource/apikey.ts";
import type { KubeApi } from "../kube/kube-api.ts";
import { namespaceBinding, type CustomerNames, type NamespaceBinding } from "../resource/namespace-binding.ts";
import { formatRef, refOf, type ObjectRef } from "../resource/object-ref.ts";
import type { KeyRecord, KeyStore, KeyView, KeyWithToken } from "./keystore.ts";
import type { PlanInput } from "./plan.ts";
import type { Workload } from "../rotation/workloads.ts";

/** What the informers hold: the ApiKeys, the Namespaces, the Secrets labelled as keyplane's, the apps workloads. */
export interface ObjectCache {
  apiKey(ref: ObjectRef): ApiKey | undefined;
  /** A Namespace; undefined where Namespaces are not watched (the binding lifted) or it is not cached yet. */
  namespace(name: string): V1Namespace | undefined;
  managedSecret(ref: ObjectRef): V1Secret | undefined;
  /** The Secrets of keyplane's cache in `namespace` owned by the object of this uid. */
  ownedSecrets(namespace: string, uid: string | undefined): V1Secret[];
  workloads(namespace: string): Iterable<Workload>;
}

export interface GatherDeps {
  store: KeyStore;
  kube: KubeApi;
  cache: ObjectCache;
  clock: () => Date;
  /** Whether a namespace's annotation bounds the customers its ApiKeys name (KEYPLANE_NAMESPACE_BINDING). */
  namespaceBinding: boolean;
}

export interface GatherOptions {
  /** Read the ApiKey and its Secret from the API server, not the caches. */
  fresh?: boolean;
  /**
   * What the reconcile's own last pass learnt from the API server, as fresh as a read: the ApiKey its
   * last write returned, and the name of a Secret the server said is absent, which that pass did not
   * write. A new ApiKey's second pass is spared two reads.
   */
  known?: { apiKey?: ApiKey | undefined; secretAbsent?: string | undefined };
}

/**
 * The input of plan for the ApiKey `ref`; undefined once it is gone. With `fresh`, the ApiKey and its
 * Secret are read from the API server instead of the informers' caches, which may lag behind a write
 * just made; so they are while a rotation is under way, whose steps must not be taken twice from a
 * status that lags. A Secret without keyplane's label is not cached at all: it is read by name.
 */
export async function gather(deps: GatherDeps, ref: ObjectRef, options: GatherOptions = {}): Promise<PlanInput | undefined> {
  const cached = options.fresh ? undefined : deps.cache.apiKey(ref);
  const fresh = options.fresh === true || Boolean(cached?.status?.rotation?.previousKey);
  const apiKey = options.known?.apiKey ?? (fresh ? await deps.kube.readApiKey(ref) : cached);
  if (!apiKey) return undefined;
  const spec = resolveSpec(apiKey);
  const deleting = Boolean(apiKey.metadata.deletionTimestamp);
  const uid = apiKey.metadata.uid;

  const [binding, managedKeys, scope, secret] = await Promise.all([
    readBinding(deps, ref.namespace),
    deps.store.listManaged(formatRef(refOf(apiKey))),
    spec.ok && !deleting ? deps.store.resolveScope(spec.spec) : undefined,
    spec.ok && !(options.known?.secretAbsent === spec.spec.secret.name) ? readSecret(deps, { namespace: ref.namespace, name: spec.spec.secret.name }, fresh) : undefined,
  ]);
  const [key, customers] = await Promise.all([
    spec.ok && scope?.found ? deps.store.findKey(scope.scope, spec.spec.keyName) : undefined,
    binding.kind === "listed" && binding.listed.length > 0 ? readCustomers(deps, spec, managedKeys) : [],
  ]);
  const ownedSecrets = deps.cache.ownedSecrets(ref.namespace, uid);
  const workloads = spec.ok && spec.spec.rotation?.restartWorkloads ? [...deps.cache.workloads(ref.namespace)] : [];
  const [previousKey, rotatedElsewhere] = key && !deleting ? await Promise.all([readPreviousKey(deps, apiKey, key), readRotatedElsewhere(deps, apiKey, key)]) : [];
  return { apiKey, binding, customers, spec, scope, key, managedKeys, secret, ownedSecrets, workloads, previousKey, rotatedElsewhere, now: deps.clock() };
}

/**
 * The namespace's binding, from the informer's cache; from the API server only when the cache does not
 * hold the namespace yet (an ApiKey seen before its namespace).
 */
async function readBinding(deps: GatherDeps, namespace: string): Promise<NamespaceBinding> {
  if (!deps.namespaceBinding) return { kind: "lifted" };
  const found = deps.cache.namespace(namespace) ?? (await deps.kube.readNamespace(namespace));
  return namespaceBinding(namespace, found?.metadata?.annotations);
}

/** The customers the binding is judged on: the spec's, and those of the keys the ApiKey manages. */
async function readCustomers(deps: GatherDeps, spec: SpecResult, managedKeys: KeyView[]): Promise<CustomerNames[]> {
  const named = spec.ok ? await deps.store.findCustomer(spec.spec.customer) : undefined;
  const others = [...new Set(managedKeys.map((k) => k.scope.tenantId))].filter((id) => id !== named?.id);
  const found = await Promise.all(others.map((id) => deps.store.findCustomer(String(id))));
  return [named, ...found].filter((c): c is CustomerNames => c !== undefined);
}

/** The key the rotation under way replaced, while it still authenticates. */
async function readPreviousKey(deps: GatherDeps, apiKey: ApiKey, key: KeyWithToken): Promise<KeyWithToken | undefined> {
  const previous = apiKey.status?.rotation?.previousKey;
  return previous && previous.id !== key.id ? deps.store.findLive({ id: previous.id, scope: key.scope }) : undefined;
}

/** How many rotations made elsewhere a status may lag behind by, and still be followed. */
const MAX_ROTATIONS_BEHIND = 5;

/**
 * The key that `key` replaced in a rotation made elsewhere (REST, a leak report): when no rotation is
 * under way and the key the status shows is not `key`, its chain of replacements, followed from the
 * key the status shows, leads to `key`. A key deleted or provisioned anew is no such chain.
 */
async function readRotatedElsewhere(deps: GatherDeps, apiKey: ApiKey, key: KeyWithToken): Promise<KeyRecord | undefined> {
  const shown = apiKey.status?.key?.id;
  if (shown === undefined || shown === key.id || apiKey.status?.rotation?.previousKey) return undefined;
  let record = await deps.store.findEver(shown);
  for (let hop = 0; record && record.replacedBy !== null && hop < MAX_ROTATIONS_BEHIND; hop++) {
    if (record.replacedBy === key.id) return record;
    record = await deps.store.findEver(record.replacedBy);
  }
  return undefined;
}

async function readSecret(deps: GatherDeps, ref: ObjectRef, fresh: boolean): Promise<V1Secret | undefined> {
  return (fresh ? undefined : deps.cache.managedSecret(ref)) ?? deps.kube.readSecret(ref);
}
