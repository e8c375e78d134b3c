// The operator through a fault proxy: watches cut, 410 Gone, 409/500/429 on writes, and an operator
// stopped between provisioning a key and writing its Secret. Each converges to Ready with one key,
// and without a hot loop.
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { Operator } from "../../src/operator/start.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import type { FaultProxy } from "../support/fault-proxy.ts";
import { createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import type { TestService } from "../support/service.ts";
import { bindsCustomers, Cluster, keysEverMade, liveKeys, startTestOperator, useOperatorBehindProxy, whoAmI, writesBy } from "./operator-fixture.ts";

describeKube("operator resilience", () => {
  const kube = useKube({ withControllerManager: false });
  const env = useOperatorBehindProxy(kube, "resilience");
  // ApiKeys, Secrets, the Deployments, StatefulSets and DaemonSets a rotation restarts, and the
  // Namespace whose keyplane.dev/customers binds the ApiKeys.
  const WATCHES = 6;
  let svc: TestService;
  let proxy: FaultProxy;
  let operator: Operator;
  let k: Cluster;

  beforeAll(async () => {
    ({ svc, proxy, operator, k } = env());
    // The operator talks to the API server only through the proxy; the test itself goes direct.
    await waitFor(() => proxy.openWatches() === WATCHES, { what: "every watch open" });
  });
  afterEach(() => {
    proxy.clearFaults();
  });

  /** Converged: Ready, a working token in the Secret, and exactly one key ever made for it. */
  async function expectConverged(name: string): Promise<void> {
    await k.waitReady(name, 30_000);
    expect((await whoAmI(svc, await k.token(name))).status).toBe(200);
    expect(await keysEverMade(svc, "acme", name)).toBe(1);
  }

  /**
   * No write at all while nothing changes: the operator does not loop on its own writes. Once idle,
   * a resync reconciles every ApiKey again, as a late echo of its own writes would: none may write.
   */
  async function expectQuiet(): Promise<void> {
    await operator.idle();
    proxy.resetCounts();
    await operator.resync();
    expect(writesBy(proxy.counts())).toEqual(Object.fromEntries(proxy.count("update", "leases") ? [["leases", proxy.count("update", "leases")]] : []));
  }

  it.each(["reset", "end"] as const)("sees what changed while its watches were cut (%s), and watches again", async (mode) => {
    expect(proxy.cutWatches({ mode })).toBe(WATCHES);
    const name = `cut-${mode}`;
    await k.createApiKey(name, { customer: "acme" });
    await expectConverged(name);
    await waitFor(() => proxy.openWatches() === WATCHES, { what: "every watch open again" });

    // A Secret deleted by hand right after a cut is restored too.
    proxy.cutWatches({ mode });
    const token = await k.token(name);
    await k.core.deleteNamespacedSecret({ namespace: k.namespace, name });
    await waitFor(async () => (await k.token(name)) === token, { timeoutMs: 10_000, what: "the Secret to be restored" });
  });

  it.each(["status", "event"] as const)("relists after 410 Gone (%s) and misses nothing", async (form) => {
    for (const resource of ["apikeys", "secrets"]) proxy.expireWatches({ resource, form });
    proxy.resetCounts();
    proxy.cutWatches();
    const name = `expired-${form}`;
    await k.createApiKey(name, { customer: "acme" });
    await expectConverged(name);
    // Both informers were told 410 and listed again.
    expect(proxy.count("list", "apikeys")).toBeGreaterThanOrEqual(1);
    expect(proxy.count("list", "secrets")).toBeGreaterThanOrEqual(1);
    await waitFor(() => proxy.openWatches() === WATCHES, { what: "every watch open again" });
  });

  it.each([409, 500, 429] as const)("converges through %i answers to its writes, with one key and no hot loop", async (status) => {
    const name = `faulted-${status}`;
    for (const resource of ["secrets", "apikeys", "apikeys/status", "events"]) proxy.failWrites({ status, resource, times: 2, retryAfterSeconds: 1 });
    proxy.resetCounts();
    await k.createApiKey(name, { customer: "acme" });
    await expectConverged(name);
    // Each failed write was retried a few times, not hammered.
    expect(proxy.count("create", "secrets")).toBeLessThanOrEqual(4);
    expect(proxy.count("patch", "apikeys")).toBeLessThanOrEqual(5);
    await expectQuiet();
  });

  it("converges when the API server is slow", async () => {
    proxy.delayRequests({ ms: 300, times: 20 });
    await k.createApiKey("slow", { customer: "acme" });
    await expectConverged("slow");
  });

  it("converges with no second key when stopped between provisioning the key and writing the Secret", async () => {
    const namespace = await createTestNamespace(kube().kubeConfig, "crash", bindsCustomers("acme"));
    const kc = new Cluster(kube().kubeConfig, namespace);
    // The first operator cannot create Secrets: it provisions the key, then fails on the Secret.
    proxy.failWrites({ status: 500, resource: "secrets", verb: "create", times: 10_000 });
    const first = await startTestOperator(svc, proxy.kubeConfig, namespace);
    let second: Operator | undefined;
    try {
      await kc.createApiKey("crash", { customer: "acme" });
      const [key] = await waitFor(async () => {
        const keys = await liveKeys(svc, "acme", "crash");
        return keys.length > 0 && keys;
      }, { what: "the key to be provisioned" });
      const failed = await kc.waitFor("crash", "Error");
      expect(failed.status?.conditions?.[0]?.message).toMatch(/^createSecret failed: 500/);
      // It keeps trying by itself: Reconciling, not Stalled; Argo CD shows it Progressing.
      expect(failed.status?.conditions?.find((c) => c.type === "Reconciling")).toMatchObject({ status: "True", reason: "Error" });
      if (haveLua()) expect((await runArgoHealth(failed)).status).toBe("Progressing");
      expect(await kc.readSecret("crash")).toBeUndefined();
      await first.stop();
      proxy.clearFaults();

      second = await startTestOperator(svc, kube().kubeConfig, namespace);
      await kc.waitReady("crash", 20_000);
      const token = await kc.token("crash");
      expect((await whoAmI(svc, token)).body.id).toBe(key?.id);
      expect(await keysEverMade(svc, "acme", "crash")).toBe(1);
    } finally {
      await first.stop();
      await second?.stop();
      await deleteTestNamespace(kube().kubeConfig, namespace);
    }
  });

  it("makes no write at all when nothing changes", async () => {
    await expectQuiet();
    await expectQuiet();
  });
});
