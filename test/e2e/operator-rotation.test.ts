// Rotation end to end (docs/operator.md, "Rotation"): a real API server with kube-controller-manager,
// whose deployment, statefulset and daemonset controllers complete the rollouts of workloads of 0
// replicas (no kubelet runs pods: a workload of 1 replica never rolls out). The operator reaches the API
// server through a fault proxy that counts its writes; keyplane and the operator share a clock the test
// moves, so grace periods and `every` pass without waiting for them.
import { beforeAll, expect, it } from "vitest";
import type { ApiKeySpecInput } from "../../src/operator/resource/apikey.ts";
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { fakeClock } from "../support/clock.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { waitFor } from "../support/kube.ts";
import type { TestService } from "../support/service.ts";
import { keysEverMade, rotatingNow, useOperatorBehindProxy, whoAmI, writesBy, type Cluster } from "./operator-fixture.ts";
import { itFinishesInterruptedRotations, managedKey, RESTARTING } from "./rotation-scenarios.ts";
import { reads, Workloads, type Kind } from "./workload-fixture.ts";

describeKube("operator rotation", () => {
  const kube = useKube({ withControllerManager: true });
  const clock = fakeClock(new Date());
  const env = useOperatorBehindProxy(kube, "rotation", { clock: clock.clock });
  let svc: TestService;
  let k: Cluster;
  let w: Workloads;

  beforeAll(() => {
    ({ svc, k } = env());
    w = new Workloads(kube().kubeConfig, k.namespace);
  });

  /** An ApiKey that rotates with restarts, Ready, with the token its Secret holds. */
  async function rotatingKey(name: string, rotation: Partial<NonNullable<ApiKeySpecInput["rotation"]>> = {}): Promise<string> {
    return (await managedKey(env(), name, { ...RESTARTING, ...rotation })).token;
  }

  const reasons = async (name: string) => (await k.events(name)).map((e) => e.reason);

  it("restarts each of 10 workloads that read the Secret once, in all four ways, and retires the old key once they rolled out", async () => {
    const ways = Object.entries(reads);
    const using = await Promise.all(Array.from({ length: 10 }, (_, i) => {
      const [way, pod] = ways[i % ways.length]!;
      const kind: Kind = way === "volume" ? "StatefulSet" : way === "projected" ? "DaemonSet" : "Deployment";
      return w.create(kind, `fleet-${way.toLowerCase()}-${i}`, pod("fleet"));
    }));
    const unrelated = await w.create("Deployment", "fleet-unrelated", reads.env("another-secret"));
    const oldToken = await rotatingKey("fleet");
    const before = await k.readApiKey("fleet");
    expect(before?.status?.rotation?.nextRotationTime).toBeDefined();

    env().proxy.resetCounts();
    const startedAt = performance.now();
    await k.requestRotation("fleet", "first");
    const done = await k.waitRotated("fleet");
    const retiredAfterMs = performance.now() - startedAt;
    const newToken = await k.token("fleet");

    expect(newToken).not.toBe(oldToken);
    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(await keysEverMade(svc, "acme", "fleet")).toBe(2);
    const marker = done.status?.rotation?.lastRotationTime;
    for (const workload of using) expect(await w.restarts(workload), `${workload.kind} ${workload.name}`).toEqual({ restarts: 1, marker });
    expect(await w.restarts(unrelated)).toEqual({ restarts: 0, marker: undefined });
    expect(done.status?.rotation?.lastRequest).toBe("first");
    expect(done.status?.key?.hint).toBe(`XI…${newToken?.slice(-4)}`);
    const events = await reasons("fleet");
    expect(events.filter((r) => r === "RestartedWorkload")).toHaveLength(10);
    expect(events).toEqual(expect.arrayContaining(["Rotated", "UpdatedSecret", "RetiredKey"]));
    if (haveLua()) expect((await runArgoHealth(done)).status).toBe("Healthy");
    expect(JSON.stringify(done)).not.toContain(oldToken);

    const writes = writesBy(env().proxy.counts());
    // A figure for the closing note, not a bound: the proxy saw every write the operator made.
    console.info(`rotation with 10 workloads: old key retired ${Math.round(retiredAfterMs)} ms after the request; writes ${JSON.stringify(writes)}`);
    expect((writes.deployments ?? 0) + (writes.statefulsets ?? 0) + (writes.daemonsets ?? 0)).toBe(10);
    // One Secret update; the status: the rotation recorded, Reconciling while it rolls, and its end.
    expect(writes, JSON.stringify(await k.events("fleet"))).toMatchObject({ secrets: 1, "apikeys/status": 3, events: 13 });
  });

  it("keeps the old key while a rollout hangs, and retires it as soon as the rollout completes", async () => {
    const stuck = await w.create("Deployment", "stuck", reads.envFrom("waits"), 1);
    const oldToken = await rotatingKey("waits");
    await k.requestRotation("waits", "1");
    const rotating = await waitFor(async () => {
      const apiKey = await k.readApiKey("waits");
      return rotatingNow(apiKey) && (await w.restarts(stuck)).restarts === 1 && apiKey;
    }, { what: "the rotation to wait for the rollout" });
    const newToken = await k.token("waits");
    expect(newToken).not.toBe(oldToken);
    expect((await whoAmI(svc, oldToken)).status).toBe(200);
    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect(rotating.status?.rotation?.previousKey?.hint).toBe(`XI…${oldToken.slice(-4)}`);
    expect(rotating.status?.conditions?.find((c) => c.type === "Reconciling")?.message).toMatch(/^waiting for the restarted workloads to roll out/);
    if (haveLua()) expect((await runArgoHealth(rotating)).status).toBe("Progressing");

    await w.scale("stuck", 0);
    await k.waitRotated("waits");
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect(await w.restarts(stuck)).toMatchObject({ restarts: 2 }); // the restart and the test's scaling
  });

  it("retires the old key at the grace period's end when a rollout never completes, with a warning", async () => {
    await w.create("Deployment", "never", reads.volume("grace"), 1);
    const oldToken = await rotatingKey("grace", { gracePeriod: "10m" });
    await k.requestRotation("grace", "1");
    await waitFor(async () => rotatingNow(await k.readApiKey("grace")), { what: "the rotation to wait for the rollout" });
    expect((await whoAmI(svc, oldToken)).status).toBe(200);

    clock.advance(10 * 60_000);
    await env().operator.resync();
    await k.waitRotated("grace");
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    const retired = (await k.events("grace")).find((e) => e.reason === "RetiredKey");
    expect(retired).toMatchObject({ type: "Warning" });
    expect(retired?.message).toContain(`grace period ended before Deployment ${k.namespace}/never rolled out`);
  });

  it("rotates when `every` has passed since the key was issued, and schedules the next", async () => {
    const oldToken = await rotatingKey("periodic", { every: "10s", restartWorkloads: false, gracePeriod: "0s" });
    const first = await k.readApiKey("periodic");
    const next = first?.status?.rotation?.nextRotationTime;
    expect(next).toBeDefined();

    clock.advance(10_000);
    await env().operator.resync();
    const done = await k.waitRotated("periodic");
    const newToken = await k.token("periodic");
    expect(newToken).not.toBe(oldToken);
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(Date.parse(done.status?.rotation?.nextRotationTime ?? "")).toBeGreaterThan(Date.parse(next ?? ""));
    expect(await reasons("periodic")).toEqual(expect.arrayContaining(["Rotated", "RetiredKey"]));
  });

  it("records the annotation a new ApiKey is created with, without rotating its new key", async () => {
    const body = { apiVersion: "keyplane.dev/v1alpha1", kind: "ApiKey", metadata: { name: "born", annotations: { "keyplane.dev/rotate": "at-birth" } }, spec: { customer: "acme" } };
    await k.objects.createNamespacedCustomObject({ group: "keyplane.dev", version: "v1alpha1", plural: "apikeys", namespace: k.namespace, body });
    const ready = await waitFor(async () => {
      const apiKey = await k.readApiKey("born");
      return apiKey?.status?.rotation?.lastRequest === "at-birth" && apiKey;
    }, { what: "the request to be recorded" });
    expect(ready.status?.rotation?.lastRotationTime).toBeUndefined();
    expect(await keysEverMade(svc, "acme", "born")).toBe(1);
  });

  itFinishesInterruptedRotations(env, () => w, {
    title: "finishes a rotation stopped",
    async rotate(name) {
      await k.requestRotation(name, "1");
      return undefined;
    },
    // Before the key store made the new key.
    keysWhenRecorded: 1,
  });
});
