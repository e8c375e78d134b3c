// The operator end to end (docs/operator.md): ApiKeys applied to a real API server, the keys they make used
// on the REST API of the same keyplane. Runs unchanged on any cluster named by KEYPLANE_E2E_KUBECONFIG.
import { afterAll, beforeAll, expect, it } from "vitest";
import { MANAGED_BY_LABEL, type ApiKey } from "../../src/operator/resource/apikey.ts";
import type { Operator } from "../../src/operator/start.ts";
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { apiStatusCode, createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { startService, type TestService } from "../support/service.ts";
import { bindsCustomers, Cluster, createCustomer, liveKeys, startTestOperator, whoAmI } from "./operator-fixture.ts";

const DOMAIN = "sip.acme.example";

describeKube("operator", () => {
  // No kube-controller-manager: no garbage collector, so a Secret that goes is one the operator deleted.
  const kube = useKube({ withControllerManager: false });
  let svc: TestService;
  let operator: Operator;
  let k: Cluster;

  beforeAll(async () => {
    svc = await startService("pglite");
    await createCustomer(svc, "acme", DOMAIN);
    const namespace = await createTestNamespace(kube().kubeConfig, "operator", bindsCustomers("acme", "initech"));
    k = new Cluster(kube().kubeConfig, namespace);
    operator = await startTestOperator(svc, kube().kubeConfig, namespace);
  });

  afterAll(async () => {
    await operator?.stop();
    if (k) await deleteTestNamespace(kube().kubeConfig, k.namespace);
    await svc?.stop();
  });

  it("provisions the key of a new ApiKey and writes it into a Secret whose token authenticates", async () => {
    await k.createApiKey("billing", { customer: "acme", domain: DOMAIN, secret: { name: "billing-api-key", labels: { app: "billing" } } });
    const ready = await k.waitReady("billing");
    const secret = await k.readSecret("billing-api-key");
    const token = await k.token("billing-api-key");

    expect(token).toMatch(/^XI[0-9A-F]{32}$/);
    const me = await whoAmI(svc, token);
    expect(me).toMatchObject({ status: 200, body: { name: "billing", type: "customer", domain: { domain: DOMAIN } } });
    expect(secret?.type).toBe("Opaque");
    expect(secret?.metadata?.labels).toEqual({ app: "billing", [MANAGED_BY_LABEL]: "keyplane" });
    expect(secret?.metadata?.ownerReferences).toEqual([expect.objectContaining({
      apiVersion: "keyplane.dev/v1alpha1", kind: "ApiKey", name: "billing", uid: ready.metadata.uid, controller: true, blockOwnerDeletion: true,
    })]);
    expect(ready.metadata.finalizers).toContain("keyplane.dev/finalizer");
    expect(ready.status).toMatchObject({
      observedGeneration: ready.metadata.generation,
      key: { id: me.body.id, type: "customer", hint: `XI…${token?.slice(-4)}` },
      secretName: "billing-api-key",
      // Reconciling and Stalled are left out when they do not hold.
      conditions: [expect.objectContaining({ type: "Ready", status: "True", reason: "Provisioned", observedGeneration: ready.metadata.generation })],
    });
    if (haveLua()) expect((await runArgoHealth(ready)).status).toBe("Healthy");
    expect(JSON.stringify(ready)).not.toContain(token);
    const events = await k.events("billing");
    expect(events.map((e) => e.message)).toEqual(expect.arrayContaining([
      `Created Secret ${k.namespace}/billing-api-key`,
      expect.stringMatching(/^Provisioned key "billing"/),
    ]));
    expect(JSON.stringify(events)).not.toContain(token);
    expect(await liveKeys(svc, "acme", "billing")).toEqual([expect.objectContaining({ managed_by: `${k.namespace}/billing` })]);
    expect(svc.logs.join("")).not.toContain(token);
  });

  it("disables the key when the spec says active: false, and enables it again", async () => {
    await k.createApiKey("toggle", { customer: "acme" });
    await k.waitReady("toggle");
    const token = await k.token("toggle");
    expect((await whoAmI(svc, token)).status).toBe(200);

    await k.patchSpec("toggle", { active: false });
    await k.waitReady("toggle");
    await waitFor(async () => (await whoAmI(svc, token)).status === 401, { what: "the token to be refused" });
    await k.patchSpec("toggle", { active: true });
    await waitFor(async () => (await whoAmI(svc, token)).status === 200, { what: "the token to work again" });
    expect(await k.token("toggle")).toBe(token);
  });

  it("provisions a new key within seconds when the key is deleted through REST, and updates the Secret", async () => {
    await k.createApiKey("rest-deleted", { customer: "acme" });
    await k.waitReady("rest-deleted");
    const before = await k.token("rest-deleted");
    const { body: { id } } = await whoAmI(svc, before);
    const deleted = await svc.as(before ?? "").delete(`/keys/${id}`);
    expect(deleted.status).toBe(204);
    const start = performance.now();
    const after = await waitFor(async () => {
      const token = await k.token("rest-deleted");
      return token !== before && token;
    }, { timeoutMs: 10_000, intervalMs: 50, what: "a new token in the Secret" });
    expect(performance.now() - start).toBeLessThan(5_000);
    expect((await whoAmI(svc, before)).status).toBe(401);
    expect((await whoAmI(svc, after)).status).toBe(200);
    expect(await liveKeys(svc, "acme", "rest-deleted")).toHaveLength(1);
  });

  it("re-activates a key disabled through REST: the spec wins", async () => {
    await k.createApiKey("rest-disabled", { customer: "acme" });
    const ready = await k.waitReady("rest-disabled");
    const token = await k.token("rest-disabled");
    const admin = await whoAmI(svc, token);
    // The key cannot disable itself and keep access; an admin-made customer key manages it.
    const root = (await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as { keyId: string };
    const put = await svc.as(root.keyId).put(`/customers/acme/keys/${admin.body.id}`, { active: false });
    expect(put.status).toBe(200);
    await waitFor(async () => (await whoAmI(svc, token)).status === 200, { timeoutMs: 10_000, what: "the key to be active again" });
    expect((await k.readApiKey("rest-disabled"))?.status?.key?.id).toBe(ready.status?.key?.id);
  });

  it("restores a Secret deleted by hand, and one edited by hand", async () => {
    await k.createApiKey("restored", { customer: "acme", secret: { annotations: { team: "a" } } });
    await k.waitReady("restored");
    const token = await k.token("restored");

    await k.core.deleteNamespacedSecret({ namespace: k.namespace, name: "restored" });
    await waitFor(async () => (await k.token("restored")) === token, { what: "the Secret to be recreated" });

    const secret = await k.readSecret("restored");
    await k.core.replaceNamespacedSecret({
      namespace: k.namespace, name: "restored",
      body: { ...secret, metadata: { ...secret?.metadata, labels: {}, annotations: { team: "b" } }, data: { apiKey: Buffer.from("edited").toString("base64") } },
    });
    const fixed = await waitFor(async () => {
      const s = await k.readSecret("restored");
      return s?.metadata?.labels?.[MANAGED_BY_LABEL] === "keyplane" && s.metadata.annotations?.team === "a" && s;
    }, { what: "the Secret to be restored" });
    expect(Buffer.from(fixed.data?.apiKey ?? "", "base64").toString()).toBe(token);
  });

  it("never touches a Secret of that name that it does not own: SecretConflict", async () => {
    const foreign = await k.core.createNamespacedSecret({
      namespace: k.namespace, body: { metadata: { name: "taken" }, stringData: { apiKey: "someone else's" } },
    });
    await k.createApiKey("conflicted", { customer: "acme", secret: { name: "taken" } });
    const apiKey = await k.waitFor("conflicted", "SecretConflict");

    expect(apiKey.status?.conditions?.[0]).toMatchObject({ status: "False", message: expect.stringContaining(`Secret ${k.namespace}/taken`) });
    // Everything the operator would do about it, it has done: idle, then every ApiKey reconciled again.
    await operator.idle();
    await operator.resync();
    const after = await k.readSecret("taken");
    expect(after?.metadata?.resourceVersion).toBe(foreign.metadata?.resourceVersion);
    expect(after?.data).toEqual(foreign.data);
    expect(await liveKeys(svc, "acme", "conflicted")).toEqual([]);
    expect((await k.events("conflicted")).map((e) => [e.type, e.reason])).toContainEqual(["Warning", "SecretConflict"]);

    // Once the Secret is gone, the ApiKey gets its key and its Secret (retried with backoff).
    await k.core.deleteNamespacedSecret({ namespace: k.namespace, name: "taken" });
    await k.waitReady("conflicted");
  });

  it("never takes over a key that another ApiKey manages: KeyConflict on the second", async () => {
    await k.createApiKey("first", { customer: "acme", keyName: "shared" });
    await k.waitReady("first");
    await k.createApiKey("second", { customer: "acme", keyName: "shared" });
    const second = await k.waitFor("second", "KeyConflict");

    expect(second.status?.conditions?.[0]?.message).toContain(`ApiKey ${k.namespace}/first`);
    // A person must act: Stalled with Ready's reason, which Argo CD reads as Degraded.
    expect(second.status?.conditions?.find((c) => c.type === "Stalled")).toMatchObject({ status: "True", reason: "KeyConflict" });
    if (haveLua()) expect(await runArgoHealth(second)).toMatchObject({ status: "Degraded", message: expect.stringMatching(/^KeyConflict: /) });
    expect(await k.readSecret("second")).toBeUndefined();
    expect(await liveKeys(svc, "acme", "shared")).toEqual([expect.objectContaining({ managed_by: `${k.namespace}/first` })]);
  });

  it("adopts a key made through REST", async () => {
    const made = (await svc.admin.post("/admin/customers/acme/keys", { name: "legacy" })).body as { id: number; keyId: string };
    await k.createApiKey("legacy", { customer: "acme" });
    await k.waitReady("legacy");
    expect(await k.token("legacy")).toBe(made.keyId);
    expect(await liveKeys(svc, "acme", "legacy")).toEqual([expect.objectContaining({ id: made.id, managed_by: `${k.namespace}/legacy` })]);
  });

  it("waits for an unknown customer (ScopeNotFound, Stalled, Degraded in Argo CD), and is Ready and Healthy once it is created", async () => {
    await k.createApiKey("early", { customer: "initech" });
    const waiting = await k.waitFor("early", "ScopeNotFound");
    const message = 'customer "initech" does not exist in keyplane';
    expect(waiting.status?.conditions).toEqual([
      expect.objectContaining({ type: "Ready", status: "False", reason: "ScopeNotFound", message, observedGeneration: waiting.metadata.generation }),
      expect.objectContaining({ type: "Stalled", status: "True", reason: "ScopeNotFound", message, observedGeneration: waiting.metadata.generation }),
    ]);
    if (haveLua()) expect(await runArgoHealth(waiting)).toEqual({ status: "Degraded", message: `ScopeNotFound: ${message}` });

    await createCustomer(svc, "initech");
    const ready = await k.waitReady("early", 15_000);
    expect((await whoAmI(svc, await k.token("early"))).status).toBe(200);
    expect(ready.status?.conditions?.map((c) => c.type)).toEqual(["Ready"]);
    if (haveLua()) expect(await runArgoHealth(ready)).toMatchObject({ status: "Healthy" });
  });

  it("refuses a rotation period that is no Go duration, and reports one under 10s as InvalidSpec (Stalled)", async () => {
    await expect(k.createApiKey("daily", { customer: "acme", rotation: { every: "1d" } })).rejects.toSatisfy((e) => apiStatusCode(e) === 422);
    await k.createApiKey("hasty", { customer: "acme", rotation: { every: "5s" } });
    const apiKey = await k.waitFor("hasty", "InvalidSpec");
    expect(apiKey.status?.conditions).toEqual([
      expect.objectContaining({ type: "Ready", status: "False", message: "spec.rotation.every: must be at least 10s" }),
      expect.objectContaining({ type: "Stalled", status: "True", reason: "InvalidSpec" }),
    ]);
    expect(await k.readSecret("hasty")).toBeUndefined();
  });

  it("reports a spec that breaks the scope rules (InvalidSpec) where the API server does not refuse it", async () => {
    let created: ApiKey | undefined;
    try {
      created = await k.createApiKey("invalid", { customer: "acme", application: "ivr" });
    } catch (error) {
      // From Kubernetes 1.25 the CRD's CEL rules refuse it at the door.
      expect(apiStatusCode(error)).toBe(422);
      return;
    }
    expect(created).toBeDefined();
    const apiKey = await k.waitFor("invalid", "InvalidSpec");
    expect(apiKey.status?.conditions?.[0]?.message).toMatch(/application needs domain/);
    expect(await k.readSecret("invalid")).toBeUndefined();
  });

  it("deletes the key and the Secret with the ApiKey (deletionPolicy Delete)", async () => {
    await k.createApiKey("doomed", { customer: "acme" });
    await k.waitReady("doomed");
    const token = await k.token("doomed");
    await k.deleteApiKey("doomed");
    await k.waitGone("doomed");
    expect(await k.readSecret("doomed")).toBeUndefined();
    expect((await whoAmI(svc, token)).status).toBe(401);
    expect(await liveKeys(svc, "acme", "doomed")).toEqual([]);
  });

  it("keeps the key, released, and deletes the Secret (deletionPolicy Retain)", async () => {
    await k.createApiKey("kept", { customer: "acme", deletionPolicy: "Retain" });
    await k.waitReady("kept");
    const token = await k.token("kept");
    await k.deleteApiKey("kept");
    await k.waitGone("kept");
    expect(await k.readSecret("kept")).toBeUndefined();
    expect((await whoAmI(svc, token)).status).toBe(200);
    expect(await liveKeys(svc, "acme", "kept")).toEqual([expect.objectContaining({ managed_by: null })]);
  });

  it("follows spec changes: keyName renames the key (same token), secret.name moves the Secret", async () => {
    await k.createApiKey("moving", { customer: "acme", keyName: "moving-v1" });
    await k.waitReady("moving");
    const token = await k.token("moving");
    await k.patchSpec("moving", { keyName: "moving-v2", secret: { name: "moving-secret" } });
    await k.waitReady("moving");
    await waitFor(async () => (await k.readSecret("moving")) === undefined, { what: "the old Secret to go" });
    expect(await k.token("moving-secret")).toBe(token);
    expect((await whoAmI(svc, token)).body.name).toBe("moving-v2");
    expect(await liveKeys(svc, "acme", "moving-v1")).toEqual([]);
  });

  it("caches only keyplane's Secrets, however many others the namespace has", async () => {
    const before = operator.stats();
    await Promise.all(Array.from({ length: 25 }, (_, i) =>
      k.core.createNamespacedSecret({ namespace: k.namespace, body: { metadata: { name: `unrelated-${i}` }, stringData: { x: "y" } } })));
    await k.createApiKey("counted", { customer: "acme" });
    await k.waitReady("counted");
    await waitFor(() => operator.stats()?.secrets === (before?.secrets ?? 0) + 1, { what: "the new Secret in the cache" });
    await operator.idle();
    expect(operator.stats()?.secrets).toBe((before?.secrets ?? 0) + 1);
  });

  it("writes nothing when nothing changed", async () => {
    await k.createApiKey("quiet", { customer: "acme" });
    const ready = await k.waitReady("quiet");
    await operator.resync();
    await operator.resync();
    const after = await k.readApiKey("quiet");
    expect(after?.metadata.resourceVersion).toBe(ready.metadata.resourceVersion);
  });
});
