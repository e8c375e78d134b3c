// Rotations made elsewhere, followed (docs/operator.md, "Rotations made elsewhere"): a key rotated
// through REST or by a leak report gets its new token into the Secret within 5 s, the workloads that
// read it restarted once, and the replaced key retired once they have rolled out, or at the end of the
// grace period that rotation gave it; with the operator stopped at each step and another started, the
// same, exactly once. A real API server with kube-controller-manager completing the rollouts of
// workloads of 0 replicas; the operator behind a fault proxy; keyplane and the operator on one clock.
import { beforeAll, expect, it } from "vitest";
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { fakeClock } from "../support/clock.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { waitFor } from "../support/kube.ts";
import type { TestService } from "../support/service.ts";
import { keysEverMade, rotatingNow, useOperatorBehindProxy, whoAmI, writesBy, type Cluster } from "./operator-fixture.ts";
import { itFinishesInterruptedRotations, managedKey, RESTARTING } from "./rotation-scenarios.ts";
import { reads, Workloads, type WorkloadRef } from "./workload-fixture.ts";

/** The contract's bound from a rotation made elsewhere to the new token in the Secret. */
const SECRET_WITHIN_MS = 5_000;
const HOUR_S = 3600;

describeKube("operator: rotations made elsewhere", () => {
  const kube = useKube({ withControllerManager: true });
  const clock = fakeClock(new Date());
  const env = useOperatorBehindProxy(kube, "followed", { clock: clock.clock, leaks: { policy: "rotate", graceSeconds: 0 } });
  let svc: TestService;
  let k: Cluster;
  let w: Workloads;
  /** A customer key that rotates the operator's keys through REST, as a person or a script would. */
  let root: string;

  beforeAll(async () => {
    ({ svc, k } = env());
    w = new Workloads(kube().kubeConfig, k.namespace);
    root = ((await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as { keyId: string }).keyId;
  });

  /** POST .../rotate through REST, by a key that manages the operator's: the new token. */
  async function rotateThroughRest(id: number, gracePeriodSeconds: number): Promise<string> {
    const res = await svc.as(root).post(`/customers/acme/keys/${id}/rotate`, { gracePeriodSeconds });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body as { keyId: string }).keyId;
  }

  /** How long after `start` the Secret held `token`. */
  async function secretHolds(name: string, token: string, start: number): Promise<number> {
    await waitFor(async () => (await k.token(name)) === token, { timeoutMs: 15_000, intervalMs: 20, what: `Secret ${name} to hold the new token` });
    return performance.now() - start;
  }

  async function workloadsReading(name: string): Promise<WorkloadRef[]> {
    return [
      await w.create("Deployment", `${name}-env`, reads.env(name)),
      await w.create("StatefulSet", `${name}-volume`, reads.volume(name)),
      await w.create("DaemonSet", `${name}-projected`, reads.projected(name)),
    ];
  }

  const reasons = async (name: string) => (await k.events(name)).map((e) => e.reason);

  it("follows a rotation made through REST: the Secret within 5 s, each workload restarted once, the old key retired once they rolled out", async () => {
    const using = await workloadsReading("rest");
    const unrelated = await w.create("Deployment", "rest-unrelated", reads.env("another-secret"));
    const { token: oldToken, id } = await managedKey(env(), "rest", RESTARTING);
    env().proxy.resetCounts();

    const start = performance.now();
    const newToken = await rotateThroughRest(id, HOUR_S);
    const inSecretAfter = await secretHolds("rest", newToken, start);
    const done = await k.waitRotated("rest");
    const retiredAfter = performance.now() - start;
    console.info(`[followed] REST rotation: new token in the Secret after ${Math.round(inSecretAfter)} ms, old key retired after ${Math.round(retiredAfter)} ms; ` +
      `writes ${JSON.stringify(writesBy(env().proxy.counts()))}`);
    expect(inSecretAfter).toBeLessThan(SECRET_WITHIN_MS);

    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(await keysEverMade(svc, "acme", "rest")).toBe(2);
    const marker = done.status?.rotation?.lastRotationTime;
    expect(marker).toBeDefined();
    for (const workload of using) expect(await w.restarts(workload), `${workload.kind} ${workload.name}`).toEqual({ restarts: 1, marker });
    expect(await w.restarts(unrelated)).toEqual({ restarts: 0, marker: undefined });
    expect(done.status?.key?.hint).toBe(`XI…${newToken.slice(-4)}`);
    const events = await k.events("rest");
    expect(events.find((e) => e.reason === "Rotated")?.message).toMatch(/^Key "rest" was rotated outside this ApiKey: a new key replaces XI…/);
    expect(events.filter((e) => e.reason === "RestartedWorkload")).toHaveLength(3);
    expect(events.find((e) => e.reason === "RetiredKey")).toMatchObject({ type: "Normal" });
    if (haveLua()) expect((await runArgoHealth(done)).status).toBe("Healthy");
    expect(JSON.stringify([done, events])).not.toContain(oldToken);
    expect(JSON.stringify([done, events])).not.toContain(newToken);
    expect(writesBy(env().proxy.counts())).toMatchObject({ secrets: 1, deployments: 1, statefulsets: 1, daemonsets: 1 });
  });

  it("shows Reconciling (Progressing in Argo CD) and the previous key while a followed rotation rolls out", async () => {
    const stuck = await w.create("Deployment", "rolling-stuck", reads.envFrom("rolling"), 1);
    const { token: oldToken, id } = await managedKey(env(), "rolling", RESTARTING);
    const newToken = await rotateThroughRest(id, HOUR_S);
    const rotating = await waitFor(async () => {
      const apiKey = await k.readApiKey("rolling");
      return rotatingNow(apiKey) && (await w.restarts(stuck)).restarts === 1 && apiKey;
    }, { what: "the followed rotation to wait for the rollout" });
    expect(await k.token("rolling")).toBe(newToken);
    expect(rotating.status?.rotation?.previousKey).toMatchObject({ id, hint: `XI…${oldToken.slice(-4)}` });
    expect(rotating.status?.key?.hint).toBe(`XI…${newToken.slice(-4)}`);
    expect(rotating.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "True" });
    if (haveLua()) expect(await runArgoHealth(rotating)).toMatchObject({ status: "Progressing", message: expect.stringMatching(/^Rotating: waiting for the restarted workloads/) });
    expect((await whoAmI(svc, oldToken)).status).toBe(200);

    await w.scale("rolling-stuck", 0);
    await k.waitRotated("rolling");
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(await w.restarts(stuck)).toMatchObject({ restarts: 2 }); // the restart and the test's scaling
  });

  it("follows a leak report's rotation: the Secret within 5 s, the workloads restarted once", async () => {
    const using = await workloadsReading("leaked");
    const { token: oldToken, id } = await managedKey(env(), "leaked", RESTARTING);
    const start = performance.now();
    const report = await svc.admin.post("/admin/leaks", { tokens: [oldToken], source: "test" });
    expect(report.body).toEqual([expect.objectContaining({ label: "true_positive" })]);
    await waitFor(async () => (await k.token("leaked")) !== oldToken, { timeoutMs: 15_000, intervalMs: 20, what: "the Secret to hold the leaked key's successor" });
    expect(performance.now() - start).toBeLessThan(SECRET_WITHIN_MS);
    const done = await k.waitRotated("leaked");
    const newToken = await k.token("leaked");
    // KEYPLANE_LEAK_GRACE_SECONDS is 0 here: the leaked token stopped at once.
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect(await keysEverMade(svc, "acme", "leaked")).toBe(2);
    for (const workload of using) expect((await w.restarts(workload)).restarts, `${workload.kind} ${workload.name}`).toBe(1);
    expect(done.status?.rotation?.previousKey).toBeUndefined();
    const actions = await svc.ctx.db.query<{ action: string }>("SELECT action FROM key_events WHERE key_id = $1 ORDER BY id", [id]);
    expect(actions.map((a) => a.action)).toEqual(["created", "leaked", "rotated"]);
  });

  it("without restartWorkloads, leaves the replaced key the grace period the rotation gave it", async () => {
    const { token: oldToken, id } = await managedKey(env(), "graceful");
    const newToken = await rotateThroughRest(id, 600);
    await secretHolds("graceful", newToken, performance.now());
    await waitFor(async () => rotatingNow(await k.readApiKey("graceful")), { what: "the rotation to be under way" });
    expect((await whoAmI(svc, oldToken)).status).toBe(200);

    clock.advance(600_000);
    await env().operator.resync();
    await k.waitRotated("graceful");
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(await reasons("graceful")).not.toContain("RestartedWorkload");
  });

  it("follows a rotation made while no operator ran, once one starts", async () => {
    const using = await workloadsReading("offline");
    const { token: oldToken, id } = await managedKey(env(), "offline", RESTARTING);
    await env().operator.stop();
    let newToken: string;
    try {
      newToken = await rotateThroughRest(id, HOUR_S);
    } finally {
      await env().restartOperator();
    }
    await k.waitRotated("offline");
    expect(await k.token("offline")).toBe(newToken);
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    for (const workload of using) expect((await w.restarts(workload)).restarts).toBe(1);
  });

  itFinishesInterruptedRotations(env, () => w, {
    title: "follows a rotation once when stopped",
    rotate: (_name, id) => rotateThroughRest(id, HOUR_S),
    // The successor is made through REST before the operator hears of it.
    keysWhenRecorded: 2,
  });
});
