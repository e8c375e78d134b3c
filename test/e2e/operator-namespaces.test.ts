// A namespace's ApiKeys name only the customers its annotation keyplane.dev/customers lists
// (docs/operator.md, "Namespaces and customers"), on a real API server. Each case has a namespace of
// its own, as a team would, with an operator watching it; what a team in a namespace can try is tried.
import { CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CUSTOMERS_ANNOTATION } from "../../src/operator/resource/namespace-binding.ts";
import type { Operator, OperatorOptions } from "../../src/operator/start.ts";
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { startService, type TestService } from "../support/service.ts";
import { bindsCustomers, Cluster, liveKeys, startTestOperator, whoAmI } from "./operator-fixture.ts";

interface Customer {
  id: number;
  uuid: string;
  name: string;
}

describeKube("operator: namespaces bound to customers", () => {
  const kube = useKube({ withControllerManager: false });
  let svc: TestService;
  let acme: Customer;
  let globex: Customer;
  const started: Array<{ operator: Operator; namespace: string }> = [];

  beforeAll(async () => {
    svc = await startService("pglite");
    const create = async (name: string) => {
      const res = await svc.admin.post("/admin/customers", { name });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body as Customer;
    };
    acme = await create("acme");
    globex = await create("globex");
  });

  afterAll(async () => {
    for (const { operator, namespace } of started) {
      await operator.stop();
      await deleteTestNamespace(kube().kubeConfig, namespace);
    }
    await svc?.stop();
  });

  /** A namespace annotated as given (not at all for undefined), and an operator that watches it. */
  async function namespaceWith(customers: string | undefined, options: Partial<OperatorOptions> = {}): Promise<{ k: Cluster; operator: Operator }> {
    const namespace = await createTestNamespace(kube().kubeConfig, "bound", customers === undefined ? {} : bindsCustomers(customers));
    const operator = await startTestOperator(svc, kube().kubeConfig, namespace, options);
    started.push({ operator, namespace });
    return { k: new Cluster(kube().kubeConfig, namespace), operator };
  }

  /** Sets the namespace's keyplane.dev/customers, or removes it (null), as a cluster administrator would. */
  async function annotate(namespace: string, customers: string | null): Promise<void> {
    const body = { metadata: { annotations: { [CUSTOMERS_ANNOTATION]: customers } } };
    await kube().kubeConfig.makeApiClient(CoreV1Api).patchNamespace({ name: namespace, body }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  }

  /** What the store holds of every key named `name`, of any customer. */
  async function keysNamed(name: string) {
    return svc.ctx.db.query<{ id: number; tenant_id: number; managed_by: string | null; active: boolean }>(
      "SELECT id, tenant_id, managed_by, active FROM api_keys WHERE name = $1 AND deleted_at IS NULL ORDER BY id", [name]);
  }

  it("refuses an ApiKey in a namespace without the annotation: NamespaceNotAllowed, Stalled, Degraded, no key, no Secret", async () => {
    const { k } = await namespaceWith(undefined);
    await k.createApiKey("billing", { customer: "acme" });
    const refused = await k.waitFor("billing", "NamespaceNotAllowed");

    const message = `this ApiKey may not name customer "acme": namespace ${k.namespace} has no annotation keyplane.dev/customers. ` +
      `A cluster administrator allows it with: kubectl annotate namespace ${k.namespace} keyplane.dev/customers='acme'`;
    expect(refused.status?.conditions).toEqual([
      expect.objectContaining({ type: "Ready", status: "False", reason: "NamespaceNotAllowed", message }),
      expect.objectContaining({ type: "Stalled", status: "True", reason: "NamespaceNotAllowed", message }),
    ]);
    expect(refused.status?.key).toBeUndefined();
    expect(refused.metadata.finalizers ?? []).not.toContain("keyplane.dev/finalizer");
    if (haveLua()) expect(await runArgoHealth(refused)).toEqual({ status: "Degraded", message: `NamespaceNotAllowed: ${message}` });
    expect(await k.readSecret("billing")).toBeUndefined();
    expect(await keysNamed("billing")).toEqual([]);
    expect((await k.events("billing")).map((e) => [e.type, e.reason])).toEqual([["Warning", "NamespaceNotAllowed"]]);
  });

  it("refuses a customer other than the ones the annotation lists, by name or by id, and provisions a listed one", async () => {
    const { k } = await namespaceWith("globex");
    await k.createApiKey("by-name", { customer: "acme" });
    await k.createApiKey("by-id", { customer: String(acme.id) });
    await k.createApiKey("by-uuid", { customer: acme.uuid });
    await k.createApiKey("listed", { customer: "globex" });
    for (const name of ["by-name", "by-id", "by-uuid"]) await k.waitFor(name, "NamespaceNotAllowed");
    await k.waitReady("listed");

    const keys = await svc.ctx.db.query<{ tenant_id: number }>("SELECT tenant_id FROM api_keys WHERE managed_by LIKE $1", [`${k.namespace}/%`]);
    expect(keys).toEqual([{ tenant_id: globex.id }]);
    for (const name of ["by-name", "by-id", "by-uuid"]) expect(await k.readSecret(name)).toBeUndefined();
    expect((await whoAmI(svc, await k.token("listed"))).body).toMatchObject({ name: "listed" });
  });

  it("lets a namespace annotated `*` name every customer", async () => {
    const { k } = await namespaceWith(" * ");
    await k.createApiKey("acme-key", { customer: "acme" });
    await k.createApiKey("globex-key", { customer: String(globex.id) });
    await k.waitReady("acme-key");
    await k.waitReady("globex-key");
  });

  it("matches a customer listed by id or by uuid with the name, id or uuid the spec gives", async () => {
    const { k } = await namespaceWith(` ${acme.id} , ${globex.uuid.toUpperCase()}`);
    await k.createApiKey("acme-by-name", { customer: "ACME" });
    await k.createApiKey("globex-by-id", { customer: String(globex.id) });
    await k.createApiKey("globex-by-name", { customer: "globex" });
    for (const name of ["acme-by-name", "globex-by-id", "globex-by-name"]) await k.waitReady(name);
  });

  it("does not adopt a key made through REST for a customer the namespace does not list", async () => {
    const made = (await svc.admin.post("/admin/customers/acme/keys", { name: "legacy" })).body as { id: number; keyId: string };
    const { k, operator } = await namespaceWith("globex");
    await k.createApiKey("legacy", { customer: "acme" });
    await k.waitFor("legacy", "NamespaceNotAllowed");
    // And the one of the customer it lists is a key of its own: acme's is neither claimed nor in any Secret.
    await k.createApiKey("legacy-globex", { customer: "globex", keyName: "legacy" });
    await k.waitReady("legacy-globex");
    await operator.resync();

    expect(await keysNamed("legacy")).toEqual([
      { id: made.id, tenant_id: acme.id, managed_by: null, active: true },
      expect.objectContaining({ tenant_id: globex.id, managed_by: `${k.namespace}/legacy-globex` }),
    ]);
    expect(await k.token("legacy")).toBeUndefined();
    expect(await k.token("legacy-globex")).not.toBe(made.keyId);
  });

  it("stops changing the key once the annotation is removed: a spec change is not applied, nor drift put back, and a delete leaves the key", async () => {
    const { k, operator } = await namespaceWith("acme");
    await k.createApiKey("revoked", { customer: "acme" });
    const ready = await k.waitReady("revoked");
    const token = await k.token("revoked");

    await annotate(k.namespace, null);
    await k.waitFor("revoked", "NamespaceNotAllowed");
    await k.patchSpec("revoked", { active: false, secret: { key: "token" } });
    await k.waitFor("revoked", "NamespaceNotAllowed");
    await operator.resync();
    expect((await whoAmI(svc, token)).status).toBe(200);
    expect(await k.token("revoked")).toBe(token);
    expect(await k.token("revoked", "token")).toBeUndefined();

    // Renamed through REST: the operator no longer renames it back.
    const root = (await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as { keyId: string };
    expect((await svc.as(root.keyId).put(`/customers/acme/keys/${ready.status?.key?.id}`, { name: "renamed" })).status).toBe(200);
    await operator.resync();
    expect(await liveKeys(svc, "acme", "renamed")).toEqual([expect.objectContaining({ id: ready.status?.key?.id, managed_by: `${k.namespace}/revoked` })]);

    await k.deleteApiKey("revoked");
    await k.waitGone("revoked");
    expect((await whoAmI(svc, token)).status).toBe(200);
    expect(await liveKeys(svc, "acme", "renamed")).toEqual([expect.objectContaining({ id: ready.status?.key?.id, active: true })]);
  });

  it("reconciles within moments once the annotation is added", async () => {
    const { k } = await namespaceWith(undefined);
    await k.createApiKey("late", { customer: "acme" });
    await k.waitFor("late", "NamespaceNotAllowed");

    const start = performance.now();
    await annotate(k.namespace, "globex, acme");
    const ready = await waitFor(async () => {
      const apiKey = await k.readApiKey("late");
      return apiKey?.status?.conditions?.[0]?.reason === "Provisioned" && apiKey;
    }, { timeoutMs: 10_000, intervalMs: 50, what: "the ApiKey to be Ready once annotated" });
    expect(performance.now() - start).toBeLessThan(3_000);
    expect(ready.status?.conditions?.map((c) => c.type)).toEqual(["Ready"]);
    expect((await whoAmI(svc, await k.token("late"))).status).toBe(200);
  });

  it("with KEYPLANE_NAMESPACE_BINDING=off, lets an ApiKey of any namespace name any customer, as before", async () => {
    const { k } = await namespaceWith(undefined, { namespaceBinding: false });
    await k.createApiKey("unbound", { customer: "acme" });
    await k.waitReady("unbound");
    expect((await whoAmI(svc, await k.token("unbound"))).status).toBe(200);
  });
});
