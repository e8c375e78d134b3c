// Shared by the operator's end-to-end suites: an in-process keyplane with its operator against a
// Kubernetes API, and the few reads and writes of ApiKeys, Secrets and keys the suites make.
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { CoreV1Event, KubeConfig, V1Secret } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect } from "vitest";
import { GROUP, PLURAL, CRD_VERSION, type ApiKey, type ApiKeySpecInput } from "../../src/operator/resource/apikey.ts";
import { CUSTOMERS_ANNOTATION } from "../../src/operator/resource/namespace-binding.ts";
import { runOperator, type Operator, type OperatorOptions } from "../../src/operator/start.ts";
import { FaultProxy } from "../support/fault-proxy.ts";
import type { TestCluster } from "../support/envtest.ts";
import { apiStatusCode, createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { startService, type TestService, type TestServiceOptions } from "../support/service.ts";

/** Timings that keep the suites quick: short backoffs and Lease. */
export const FAST: Partial<OperatorOptions> = {
  resyncMs: 60_000,
  backoff: { baseMs: 200, maxMs: 2_000 },
  watchBackoff: { baseMs: 100, maxMs: 1_000 },
  leaseDurationMs: 3_000,
  renewDeadlineMs: 2_000,
  retryPeriodMs: 500,
};

/**
 * The annotation a cluster administrator sets on a namespace so that its ApiKeys may name these
 * customers (docs/operator.md, "Namespaces and customers"): what the suites' namespaces carry.
 */
export function bindsCustomers(...customers: string[]): Record<string, string> {
  return { [CUSTOMERS_ANNOTATION]: customers.join(",") };
}

/**
 * An operator over `svc`'s key store, watching `namespace` only (so that suites sharing a cluster
 * through KEYPLANE_E2E_KUBECONFIG do not reconcile each other's ApiKeys), its Lease there too.
 */
export async function startTestOperator(svc: TestService, kubeConfig: KubeConfig, namespace: string, options: Partial<OperatorOptions> = {}): Promise<Operator> {
  const operator = runOperator({
    ctx: svc.ctx,
    kubeConfig,
    log: svc.log.child({ component: "operator" }),
    leaseNamespace: namespace,
    watchNamespace: namespace,
    ...FAST,
    ...options,
  });
  await waitFor(() => operator.whenLeading().then(() => true), { timeoutMs: 20_000, what: "the operator to lead" });
  return operator;
}

export interface BehindProxy {
  svc: TestService;
  proxy: FaultProxy;
  operator: Operator;
  /** The test's own view of the cluster, straight to the API server. */
  k: Cluster;
  /** Stops the operator (if it still runs) and starts another in its place, as a new pod of it would. */
  restartOperator(): Promise<void>;
}

/**
 * Registers hooks that start, for the enclosing suite, a keyplane on PGlite (with `service`'s options)
 * with customer `acme`, a namespace of its own, and an operator on `service`'s clock that reaches the
 * API server only through a fault proxy; and that stop them all. Returns a getter valid inside tests.
 */
export function useOperatorBehindProxy(kube: () => TestCluster, namespacePrefix: string, service: TestServiceOptions = {}): () => BehindProxy {
  let setup: Partial<Omit<BehindProxy, "restartOperator">> = {};
  const startOperator = (svc: TestService, proxy: FaultProxy, k: Cluster) => startTestOperator(svc, proxy.kubeConfig, k.namespace, service.clock ? { clock: service.clock } : {});
  beforeAll(async () => {
    const svc = await startService("pglite", service);
    setup.svc = svc;
    await createCustomer(svc, "acme");
    const proxy = await FaultProxy.start(kube().kubeConfig);
    setup.proxy = proxy;
    const k = new Cluster(kube().kubeConfig, await createTestNamespace(kube().kubeConfig, namespacePrefix, bindsCustomers("acme")));
    setup.k = k;
    setup.operator = await startOperator(svc, proxy, k);
  });
  afterAll(async () => {
    await setup.operator?.stop();
    await setup.proxy?.close();
    if (setup.k) await deleteTestNamespace(kube().kubeConfig, setup.k.namespace);
    await setup.svc?.stop();
    setup = {};
  });
  return () => {
    const { svc, proxy, operator, k } = setup;
    if (!svc || !proxy || !operator || !k) throw new Error("the operator is not up: did beforeAll fail?");
    return {
      svc,
      proxy,
      operator,
      k,
      async restartOperator() {
        await setup.operator?.stop();
        setup.operator = await startOperator(svc, proxy, k);
      },
    };
  };
}

export class Cluster {
  readonly core: CoreV1Api;
  readonly objects: CustomObjectsApi;
  readonly namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.objects = kubeConfig.makeApiClient(CustomObjectsApi);
    this.namespace = namespace;
  }

  #crd() {
    return { group: GROUP, version: CRD_VERSION, plural: PLURAL, namespace: this.namespace };
  }

  async createApiKey(name: string, spec: ApiKeySpecInput): Promise<ApiKey> {
    const body = { apiVersion: `${GROUP}/${CRD_VERSION}`, kind: "ApiKey", metadata: { name }, spec };
    return (await this.objects.createNamespacedCustomObject({ ...this.#crd(), body })) as ApiKey;
  }

  async readApiKey(name: string): Promise<ApiKey | undefined> {
    try {
      return (await this.objects.getNamespacedCustomObject({ ...this.#crd(), name })) as ApiKey;
    } catch (error) {
      if (apiStatusCode(error) === 404) return undefined;
      throw error;
    }
  }

  /** A merge patch of the spec, as a person (or a GitOps tool) would apply it. */
  async patchSpec(name: string, spec: Partial<ApiKeySpecInput>): Promise<void> {
    await this.objects.patchNamespacedCustomObject({ ...this.#crd(), name, body: { spec } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  }

  /** A new value of the keyplane.dev/rotate annotation: one rotation asked for. */
  async requestRotation(name: string, value: string): Promise<void> {
    const body = { metadata: { annotations: { "keyplane.dev/rotate": value } } };
    await this.objects.patchNamespacedCustomObject({ ...this.#crd(), name, body }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  }

  /** The ApiKey once a rotation is over: one recorded, the old key retired, Ready alone. */
  async waitRotated(name: string, timeoutMs = 30_000): Promise<ApiKey> {
    return waitFor(async () => {
      const apiKey = await this.readApiKey(name);
      const ready = apiKey?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      const over = ready && apiKey?.status?.rotation?.lastRotationTime !== undefined && !apiKey.status.rotation.previousKey && !rotatingNow(apiKey);
      return over && apiKey;
    }, { timeoutMs, intervalMs: 50, what: `ApiKey ${this.namespace}/${name} to finish its rotation` });
  }

  async deleteApiKey(name: string): Promise<void> {
    await this.objects.deleteNamespacedCustomObject({ ...this.#crd(), name });
  }

  async readSecret(name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace: this.namespace, name });
    } catch (error) {
      if (apiStatusCode(error) === 404) return undefined;
      throw error;
    }
  }

  /** The keyId in a Secret, decoded. */
  async token(secretName: string, key = "apiKey"): Promise<string | undefined> {
    const data = (await this.readSecret(secretName))?.data?.[key];
    return data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8");
  }

  async events(apiKeyName: string): Promise<CoreV1Event[]> {
    const list = await this.core.listNamespacedEvent({ namespace: this.namespace, fieldSelector: `involvedObject.name=${apiKeyName}` });
    return list.items.filter((e) => e.involvedObject.kind === "ApiKey");
  }

  /** The ApiKey once its Ready condition has `reason` for its current generation. */
  async waitFor(name: string, reason: string, timeoutMs = 20_000): Promise<ApiKey> {
    return waitFor(async () => {
      const apiKey = await this.readApiKey(name);
      const ready = apiKey?.status?.conditions?.find((c) => c.type === "Ready");
      return apiKey && ready?.reason === reason && apiKey.status?.observedGeneration === apiKey.metadata.generation && apiKey;
    }, { timeoutMs, intervalMs: 100, what: `ApiKey ${this.namespace}/${name} to be ${reason}` });
  }

  waitReady(name: string, timeoutMs?: number): Promise<ApiKey> {
    return this.waitFor(name, "Provisioned", timeoutMs);
  }

  async waitGone(name: string, timeoutMs = 20_000): Promise<void> {
    await waitFor(async () => (await this.readApiKey(name)) === undefined, { timeoutMs, what: `ApiKey ${this.namespace}/${name} to be gone` });
  }
}

/** Whether the ApiKey shows a rotation under way: Reconciling True, reason Rotating. */
export function rotatingNow(apiKey: ApiKey | undefined): boolean {
  return apiKey?.status?.conditions?.some((c) => c.type === "Reconciling" && c.status === "True" && c.reason === "Rotating") ?? false;
}

/** What GET /keys/self answers to `token`: 200 with the key, or 401. */
export async function whoAmI(svc: TestService, token: string | undefined): Promise<{ status: number; body: { id?: number; name?: string } }> {
  const res = await svc.as(token ?? "none").get("/keys/self");
  return { status: res.status, body: res.body as { id?: number; name?: string } };
}

/** Creates a customer, and a domain of it when given, through the admin API. */
export async function createCustomer(svc: TestService, name: string, domain?: string): Promise<void> {
  const customer = await svc.admin.post("/admin/customers", { name });
  expect(customer.status, JSON.stringify(customer.body)).toBe(201);
  if (domain) {
    const res = await svc.admin.post(`/admin/customers/${name}/domains`, { domain });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

/** The live keys named `name` of a customer, whatever their scope, straight from the database. */
export async function liveKeys(svc: TestService, customer: string, name: string): Promise<Array<{ id: number; managed_by: string | null; active: boolean }>> {
  return svc.ctx.db.query(
    `SELECT k.id, k.managed_by, k.active FROM api_keys k JOIN customers c ON c.id = k.tenant_id
      WHERE lower(c.name) = lower($1) AND k.name = $2 AND k.deleted_at IS NULL ORDER BY k.id`,
    [customer, name],
  );
}

/** Every key named `name` of a customer ever made, deleted ones included. */
export async function keysEverMade(svc: TestService, customer: string, name: string): Promise<number> {
  const rows = await svc.ctx.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM api_keys k JOIN customers c ON c.id = k.tenant_id WHERE lower(c.name) = lower($1) AND k.name = $2",
    [customer, name],
  );
  return rows[0]?.n ?? 0;
}

/** Writes the proxy passed (create, update, patch, delete), by resource. */
export function writesBy(counts: Record<string, Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const verb of ["create", "update", "patch", "delete", "deletecollection"]) {
    for (const [resource, n] of Object.entries(counts[verb] ?? {})) out[resource] = (out[resource] ?? 0) + n;
  }
  return out;
}
