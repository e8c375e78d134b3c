// gather: reads what plan needs to know about one ApiKey: the resource, its Secret, the stored key.
import type { V1Secret } from "@kubernetes/client-node";
import { resolveSpec, type ApiKey } from "./apikey.ts";
import type { KubeApi } from "./kube-api.ts";
import { formatRef, refOf, type ObjectRef } from "./object-ref.ts";
import type { KeyStore } from "./keystore.ts";
import type { PlanInput } from "./plan.ts";
import { isOwnedBy } from "./secret.ts";
import type { Workload } from "./workloads.ts";

/** What the informers hold: the ApiKeys, the Secrets labelled as keyplane's, the apps workloads. */
export interface ObjectCache {
  apiKey(ref: ObjectRef): ApiKey | undefined;
  managedSecret(ref: ObjectRef): V1Secret | undefined;
  managedSecrets(namespace: string): Iterable<V1Secret>;
  workloads(namespace: string): Iterable<Workload>;
}

export interface GatherDeps {
  store: KeyStore;
  kube: KubeApi;
  cache: ObjectCache;
  clock: () => Date;
}

/**
 * The input of plan for the ApiKey `ref`; undefined once it is gone. With `fresh`, the ApiKey and its
 * Secret are read from the API server instead of the informers' caches, which may lag behind a write
 * just made; so they are while a rotation is under way, whose steps must not be taken twice from a
 * status that lags. A Secret without keyplane's label is not cached at all: it is read by name.
 */
export async function gather(deps: GatherDeps, ref: ObjectRef, options: { fresh?: boolean } = {}): Promise<PlanInput | undefined> {
  const cached = options.fresh ? undefined : deps.cache.apiKey(ref);
  const fresh = options.fresh === true || Boolean(cached?.status?.rotation?.previousKey);
  const apiKey = fresh ? await deps.kube.readApiKey(ref) : cached;
  if (!apiKey) return undefined;
  const spec = resolveSpec(apiKey);
  const deleting = Boolean(apiKey.metadata.deletionTimestamp);
  const uid = apiKey.metadata.uid;

  const [managedKeys, scope, secret] = await Promise.all([
    deps.store.listManaged(formatRef(refOf(apiKey))),
    spec.ok && !deleting ? deps.store.resolveScope(spec.spec) : undefined,
    spec.ok ? readSecret(deps, { namespace: ref.namespace, name: spec.spec.secret.name }, fresh) : undefined,
  ]);
  const key = spec.ok && scope?.found ? await deps.store.findKey(scope.scope, spec.spec.keyName) : undefined;
  const ownedSecrets = [...deps.cache.managedSecrets(ref.namespace)].filter((s) => isOwnedBy(s, uid));
  const workloads = spec.ok && spec.spec.rotation?.restartWorkloads ? [...deps.cache.workloads(ref.namespace)] : [];
  return { apiKey, spec, scope, key, managedKeys, secret, ownedSecrets, workloads, now: deps.clock() };
}

async function readSecret(deps: GatherDeps, ref: ObjectRef, fresh: boolean): Promise<V1Secret | undefined> {
  return (fresh ? undefined : deps.cache.managedSecret(ref)) ?? deps.kube.readSecret(ref);
}
