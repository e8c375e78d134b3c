// spec.policy end to end (docs/operator.md, "Policy"): the key's own policy provisioned with it, put
// back when changed through REST (announced or not: the resync is a short one here), its credits'
// balance set again only when spec.policy.credits.remaining changes, and a policy refused by the
// CRD's schema where it can be, else Ready False / Stalled True with reason InvalidSpec.
import { isDeepStrictEqual } from "node:util";
import supertest from "supertest";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ApiKeySpecInput } from "../../src/operator/resource/apikey.ts";
import type { Operator } from "../../src/operator/start.ts";
import { haveLua, runArgoHealth } from "../support/argocd.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { apiStatusCode, createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { startService, type TestService } from "../support/service.ts";
import { bindsCustomers, Cluster, createCustomer, startTestOperator } from "./operator-fixture.ts";

/** The resync of this suite's operator: a drift nobody announced is repaired within it. */
const RESYNC_MS = 2_000;
/** The contract's bound for putting back a policy changed through REST. */
const REPAIRED_WITHIN_MS = 30_000;

type Policy = NonNullable<ApiKeySpecInput["policy"]>;

const POLICY = {
  restrictions: { methods: ["GET", "POST"] },
  ratelimits: [{ name: "calls", limit: 1000, windowSeconds: 3600 }],
  credits: { remaining: 100 },
} satisfies Policy;

describeKube("operator: spec.policy", () => {
  const kube = useKube({ withControllerManager: false });
  let svc: TestService;
  let operator: Operator;
  let k: Cluster;
  /** A customer key, which may change the policies of the keys the operator makes (a key may not change its own). */
  let root: string;

  beforeAll(async () => {
    svc = await startService("pglite");
    await createCustomer(svc, "acme");
    root = ((await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as { keyId: string }).keyId;
    k = new Cluster(kube().kubeConfig, await createTestNamespace(kube().kubeConfig, "policy", bindsCustomers("acme")));
    operator = await startTestOperator(svc, kube().kubeConfig, k.namespace, { resyncMs: RESYNC_MS });
  });

  afterAll(async () => {
    await operator?.stop();
    if (k) await deleteTestNamespace(kube().kubeConfig, k.namespace);
    await svc?.stop();
  });

  /** An ApiKey with `policy`, Ready: its token and numeric id. */
  async function metered(name: string, policy: Policy): Promise<{ token: string; id: number }> {
    await k.createApiKey(name, { customer: "acme", policy });
    const ready = await k.waitReady(name);
    const token = await k.token(name);
    if (!token || ready.status?.key?.id === undefined) throw new Error(`ApiKey ${name} has no key`);
    return { token, id: ready.status.key.id };
  }

  /** What POST /verify says of a request of `method` by `token` costing `cost`. */
  async function verify(token: string, method: string, cost = 1): Promise<{ valid: boolean; code: string; credits?: { remaining: number } }> {
    const res = await supertest(svc.app).post("/verify").send({ key: token, path: "/customers/acme", method, cost });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { valid: boolean; code: string; credits?: { remaining: number } };
  }

  /** The key's live balance, as a verification sees it (a cost of 0 charges nothing). */
  const balance = async (token: string) => (await verify(token, "GET", 0)).credits?.remaining;

  /** The key's own policy as the key store holds it (credits.remaining: the balance it started with). */
  async function storedPolicy(id: number): Promise<unknown> {
    const rows = await svc.ctx.db.query<{ policy: unknown }>("SELECT policy FROM api_keys WHERE id = $1", [id]);
    return rows[0]?.policy ?? null;
  }

  async function balanceGeneration(id: number): Promise<number | undefined> {
    const rows = await svc.ctx.db.query<{ generation: number }>("SELECT generation FROM policy_balances WHERE holder = $1", [`key:${id}`]);
    return rows[0]?.generation;
  }

  const putPolicy = async (id: number, policy: object | null) => {
    const res = await svc.as(root).put(`/customers/acme/keys/${id}`, { policy });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };

  it("provisions the key with its policy, which verification then applies", async () => {
    const { token, id } = await metered("applied", POLICY);
    expect(await storedPolicy(id)).toEqual(POLICY);
    expect(await verify(token, "DELETE")).toMatchObject({ valid: false, code: "RESTRICTED" });
    expect(await verify(token, "GET", 30)).toMatchObject({ valid: true, credits: { remaining: 70 } });
  });

  it(`puts back a policy changed through REST within ${REPAIRED_WITHIN_MS / 1000} s, and one removed`, async () => {
    const { id } = await metered("drifted", POLICY);
    const loose = { ratelimits: [{ name: "calls", limit: 1_000_000, windowSeconds: 1 }] };
    for (const drift of [loose, null]) {
      const start = performance.now();
      await putPolicy(id, drift);
      await waitFor(async () => isDeepStrictEqual(await storedPolicy(id), POLICY), {
        timeoutMs: REPAIRED_WITHIN_MS, intervalMs: 100, what: `the policy put back after ${JSON.stringify(drift)}`,
      });
      console.info(`[policy] put back ${Math.round(performance.now() - start)} ms after a PUT of ${drift === null ? "null" : "a looser policy"}`);
    }
    const events = await svc.ctx.db.query<{ actor: { type: string } }>(
      "SELECT actor FROM key_events WHERE key_id = $1 AND action = 'updated' ORDER BY id", [id]);
    expect(events.map((e) => e.actor.type)).toEqual(["key", "operator", "key", "operator"]);
  }, 2 * REPAIRED_WITHIN_MS + 10_000);

  it("puts back a policy changed without any announcement, at the next resync", async () => {
    const { id } = await metered("unannounced", POLICY);
    // As if the notification had been lost: the trigger that announces key changes does not fire.
    await svc.ctx.db.transaction(async (tx) => {
      await tx.query("SET LOCAL session_replication_role = replica");
      await tx.query("UPDATE api_keys SET policy = NULL WHERE id = $1", [id]);
    });
    const start = performance.now();
    await waitFor(async () => (await storedPolicy(id)) !== null, { timeoutMs: REPAIRED_WITHIN_MS, intervalMs: 100, what: "the resync to put the policy back" });
    expect(performance.now() - start).toBeLessThan(REPAIRED_WITHIN_MS);
    expect(await storedPolicy(id)).toEqual(POLICY);
  });

  it("takes credits spent, and a balance set through REST, for no drift; sets the balance again only when credits.remaining changes", async () => {
    const { token, id } = await metered("spent", POLICY);
    expect(await verify(token, "GET", 40)).toMatchObject({ valid: true, credits: { remaining: 60 } });
    // A balance set again moves its generation: units leased under the old one are void (docs/adr/0013).
    const started = await balanceGeneration(id);
    await operator.resync();
    expect(await balanceGeneration(id)).toBe(started);
    expect(await balance(token)).toBe(60);

    // Another field of the policy changes in the spec: the policy is put, the balance kept.
    await k.patchSpec("spent", { policy: { ...POLICY, ratelimits: [{ name: "calls", limit: 500, windowSeconds: 3600 }] } });
    await waitFor(async () => ((await storedPolicy(id)) as Policy | null)?.ratelimits?.[0]?.limit === 500, { what: "the new limit" });
    await operator.resync();
    expect(await balanceGeneration(id)).toBe(started);
    expect(await balance(token)).toBe(60);

    // A balance set through REST is the key's business, not the spec's.
    expect((await svc.as(root).put(`/customers/acme/keys/${id}/credits`, { remaining: 7 })).status).toBe(200);
    await waitFor(async () => (await balance(token)) === 7, { what: "the balance set through REST" });
    const setThroughRest = await balanceGeneration(id);
    await operator.resync();
    expect(await balanceGeneration(id)).toBe(setThroughRest);
    expect(await balance(token)).toBe(7);

    // credits.remaining itself changes in the spec: the balance starts again from it.
    await k.patchSpec("spent", { policy: { ...POLICY, credits: { remaining: 250 } } });
    await waitFor(async () => (await balance(token)) === 250, { what: "the balance set again from the spec" });
  });

  it("is refused by the API server where the CRD's schema can say so", async () => {
    const refused: Array<[string, Policy]> = [
      ["two limits of one name", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1 }, { name: "a", limit: 2, windowSeconds: 1 }] }],
      ["a limit of 0", { ratelimits: [{ name: "a", limit: 0, windowSeconds: 1 }] }],
      ["a window over 30 days", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 2_592_001 }] }],
      ["eleven limits", { ratelimits: Array.from({ length: 11 }, (_, i) => ({ name: `l${i}`, limit: 1, windowSeconds: 1 })) }],
      ["credits over 10^12", { credits: { remaining: 1e12 + 1 } }],
      ["a weekly refill", { credits: { remaining: 1, refill: { amount: 1, interval: "weekly" as "daily" } } }],
      ["a leak policy it does not know", { leakPolicy: "revoke" as "rotate" }],
      ["a lower-case method", { restrictions: { methods: ["get"] } }],
      ["an empty list", { restrictions: { ips: [] } }],
    ];
    for (const [what, policy] of refused) {
      const status = await k.createApiKey("refused", { customer: "acme", policy }).then(() => 201, (error: unknown) => apiStatusCode(error));
      expect(`${what}: ${status}`).toBe(`${what}: 422`);
    }
  });

  it("reports what the schema cannot say as InvalidSpec, Stalled, Degraded in Argo CD, and provisions nothing", async () => {
    await k.createApiKey("invalid", { customer: "acme", policy: { restrictions: { ips: ["203.0.113.0/33"] } } });
    const stalled = await k.waitFor("invalid", "InvalidSpec");
    expect(stalled.status?.conditions?.find((c) => c.type === "Ready")?.message).toMatch(/^spec\.policy: restrictions\.ips\[0\]: /);
    expect(stalled.status?.conditions?.find((c) => c.type === "Stalled")).toMatchObject({ status: "True", reason: "InvalidSpec" });
    if (haveLua()) expect((await runArgoHealth(stalled)).status).toBe("Degraded");
    expect(await k.readSecret("invalid")).toBeUndefined();

    await k.patchSpec("invalid", { policy: { restrictions: { ips: ["203.0.113.0/24"] } } });
    await k.waitReady("invalid");
  });
});
