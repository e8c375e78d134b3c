// The rotation scenarios both rotation suites run (docs/operator.md, "Rotation" and "Rotations made
// elsewhere"): the operator stopped at each step of a rotation, and another started, finishes it
// once, whether the rotation was asked of the ApiKey (operator-rotation.test.ts) or made through REST
// (operator-followed-rotation.test.ts).
import { expect, it } from "vitest";
import type { ApiKeySpecInput } from "../../src/operator/resource/apikey.ts";
import { waitFor } from "../support/kube.ts";
import { keysEverMade, rotatingNow, whoAmI, type BehindProxy } from "./operator-fixture.ts";
import { reads, type Workloads } from "./workload-fixture.ts";

/** A rotation every 30 days with a grace period of an hour, restarting the workloads that read the Secret. */
export const RESTARTING = { every: "720h", gracePeriod: "1h", restartWorkloads: true };

/** An ApiKey of customer acme, Ready: the token its Secret holds and its key's numeric id. */
export async function managedKey(env: BehindProxy, name: string, rotation?: ApiKeySpecInput["rotation"]): Promise<{ token: string; id: number }> {
  await env.k.createApiKey(name, { customer: "acme", ...(rotation ? { rotation } : {}) });
  const ready = await env.k.waitReady(name);
  const token = await env.k.token(name);
  if (!token || ready.status?.key?.id === undefined) throw new Error(`ApiKey ${name} has no key`);
  return { token, id: ready.status.key.id };
}

export interface RotationMade {
  /** How the suite's tests begin: what the operator does with a rotation when stopped at a step. */
  title: string;
  /** Makes the rotation of ApiKey `name`, whose key is `id`: the new token, when it is known at once. */
  rotate(name: string, id: number): Promise<string | undefined>;
  /** The keys ever made with the name once the operator has recorded the rotation. */
  keysWhenRecorded: number;
}

interface Step {
  /** Faults in place before the rotation is made. */
  arm?: () => void;
  /** Whether the operator has reached the step: it is stopped then. */
  reached: (oldToken: string) => Promise<boolean>;
  /** What holds once it has stopped. */
  stopped?: () => Promise<void>;
}

/** The tests of a rotation interrupted at each of its steps, in the enclosing suite. */
export function itFinishesInterruptedRotations(env: () => BehindProxy, workloads: () => Workloads, made: RotationMade): void {
  /**
   * The operator stopped at one step of a rotation, and another started: the rotation finishes once,
   * with exactly two keys ever made and one restart per workload.
   */
  async function interruptedAt(name: string, step: Step): Promise<void> {
    const { svc, proxy, k } = env();
    const w = workloads();
    const using = [await w.create("Deployment", `${name}-env`, reads.env(name)), await w.create("DaemonSet", `${name}-projected`, reads.projected(name))];
    const { token: oldToken, id } = await managedKey(env(), name, RESTARTING);
    proxy.resetCounts();
    step.arm?.();
    const rotatedTo = await made.rotate(name, id);
    try {
      await waitFor(() => step.reached(oldToken), { what: `the operator to reach the step of ${name}` });
      await env().operator.stop();
      await step.stopped?.();
    } finally {
      proxy.clearFaults();
      await env().restartOperator();
    }

    await k.waitRotated(name);
    const newToken = await k.token(name);
    expect(newToken).not.toBe(oldToken);
    if (rotatedTo) expect(newToken).toBe(rotatedTo);
    expect((await whoAmI(svc, newToken)).status).toBe(200);
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
    expect(await keysEverMade(svc, "acme", name)).toBe(2);
    for (const workload of using) expect((await w.restarts(workload)).restarts, `${workload.kind} ${workload.name}`).toBe(1);
  }

  it(`${made.title} right after recording it`, async () => {
    const { proxy, svc, k } = env();
    // The recording is held at the proxy while the operator stops; it lands, and nothing follows it.
    await interruptedAt("stop-recorded", {
      arm: () => proxy.delayRequests({ ms: 1_500, times: 1, resource: "apikeys/status", verb: "patch" }),
      reached: async () => proxy.count("patch", "apikeys/status") > 0,
      async stopped() {
        expect((await k.readApiKey("stop-recorded"))?.status?.rotation?.previousKey).toBeDefined();
        expect(await keysEverMade(svc, "acme", "stop-recorded")).toBe(made.keysWhenRecorded);
      },
    });
  });

  it(`${made.title} while the Secret could not be written`, async () => {
    const { proxy } = env();
    await interruptedAt("stop-secret", {
      arm: () => proxy.failWrites({ status: 500, times: Infinity, resource: "secrets" }),
      reached: async () => proxy.count("update", "secrets") > 0,
    });
  });

  it(`${made.title} while the workloads could not be restarted`, async () => {
    const { proxy } = env();
    await interruptedAt("stop-restart", {
      arm: () => proxy.failWrites({ status: 500, times: Infinity, resource: "deployments" }),
      reached: async () => proxy.count("patch", "deployments") > 0,
    });
  });

  it(`${made.title} after the old key was retired but before its status said so`, async () => {
    const { proxy, svc, k } = env();
    const name = "stop-retired";
    // A rollout that hangs until the test scales it down, once status writes fail.
    await workloads().create("Deployment", `${name}-hang`, reads.env(name), 1);
    let scaled = false;
    await interruptedAt(name, {
      async reached(oldToken) {
        if (!scaled && rotatingNow(await k.readApiKey(name))) {
          proxy.failWrites({ status: 500, times: Infinity, resource: "apikeys/status" });
          await workloads().scale(`${name}-hang`, 0);
          scaled = true;
        }
        return scaled && (await whoAmI(svc, oldToken)).status === 401;
      },
      async stopped() {
        expect((await k.readApiKey(name))?.status?.rotation?.previousKey).toBeDefined();
      },
    });
  });
}
