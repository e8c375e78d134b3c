// spec.secret.format envoy-gateway end to end (docs/gateways.md, "Envoy Gateway"): the Secret holds one
// entry per live key of the ApiKey, `<numeric key id>: <token>`, as Envoy Gateway's SecurityPolicy
// apiKeyAuth.credentialRefs reads it; both keys during a rotation's grace, one once the old is
// retired; and a switch of format rewrites it, both ways. keyplane and the operator share a clock the
// test moves, so a grace period passes without waiting for it.
import { readFile } from "node:fs/promises";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ApiKey } from "../../src/operator/resource/apikey.ts";
import type { Operator } from "../../src/operator/start.ts";
import { fakeClock } from "../support/clock.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import { createTestNamespace, deleteTestNamespace, waitFor } from "../support/kube.ts";
import { startService, type TestService } from "../support/service.ts";
import { bindsCustomers, Cluster, createCustomer, rotatingNow, startTestOperator, whoAmI } from "./operator-fixture.ts";

const envoy = { format: "envoy-gateway" as const };

describeKube("operator: Secrets for Envoy Gateway", () => {
  const kube = useKube({ withControllerManager: false });
  const clock = fakeClock(new Date());
  let svc: TestService;
  let operator: Operator;
  let k: Cluster;
  let root: string;

  beforeAll(async () => {
    svc = await startService("pglite", { clock: clock.clock });
    await createCustomer(svc, "acme", "sip.acme.example");
    root = ((await svc.admin.post("/admin/customers/acme/keys", { name: "root" })).body as { keyId: string }).keyId;
    k = new Cluster(kube().kubeConfig, await createTestNamespace(kube().kubeConfig, "envoy", bindsCustomers("acme")));
    operator = await startTestOperator(svc, kube().kubeConfig, k.namespace, { clock: clock.clock });
  });

  afterAll(async () => {
    await operator?.stop();
    if (k) await deleteTestNamespace(kube().kubeConfig, k.namespace);
    await svc?.stop();
  });

  /** The Secret's data, decoded: what Envoy Gateway reads as client ids and their keys. */
  async function credentials(name: string): Promise<Record<string, string> | undefined> {
    const data = (await k.readSecret(name))?.data;
    return data && Object.fromEntries(Object.entries(data).map(([id, value]) => [id, Buffer.from(value, "base64").toString("utf8")]));
  }

  const idOf = async (token: string) => (await whoAmI(svc, token)).body.id;

  it("writes one entry per live key, its numeric id to its token, and nothing else", async () => {
    await k.createApiKey("gateway", { customer: "acme", secret: envoy });
    const ready = await k.waitReady("gateway");
    const data = await credentials("gateway");
    const [[id, token] = []] = Object.entries(data ?? {});
    expect(Object.keys(data ?? {})).toEqual([String(ready.status?.key?.id)]);
    expect(token).toMatch(/^XI[0-9A-F]{32}$/);
    expect(await idOf(token ?? "")).toBe(Number(id));
    expect((await k.readSecret("gateway"))?.type).toBe("Opaque");
  });

  it("holds both keys during a rotation's grace period, and the new one alone once the old is retired", async () => {
    await k.createApiKey("rotating", { customer: "acme", secret: envoy, rotation: { every: "720h", gracePeriod: "1h" } });
    await k.waitReady("rotating");
    const before = (await credentials("rotating"))!;
    const [oldId, oldToken] = Object.entries(before)[0]!;

    await k.requestRotation("rotating", "1");
    const during = await waitFor(async () => {
      const data = await credentials("rotating");
      return data && Object.keys(data).length === 2 && rotatingNow(await k.readApiKey("rotating")) && data;
    }, { what: "both keys in the Secret, the rotation under way" });
    const [newId, newToken] = Object.entries(during).find(([id]) => id !== oldId)!;
    expect(during).toEqual({ [oldId]: oldToken, [newId]: newToken });
    expect(Number(newId)).toBeGreaterThan(Number(oldId));
    expect((await whoAmI(svc, oldToken)).status).toBe(200);
    expect(await idOf(newToken)).toBe(Number(newId));

    clock.advance(3_600_000);
    await operator.resync();
    await k.waitRotated("rotating");
    expect(await credentials("rotating")).toEqual({ [newId]: newToken });
    expect((await whoAmI(svc, oldToken)).status).toBe(401);
  });

  it("holds both keys while a rotation made through REST is in its grace period", async () => {
    await k.createApiKey("rest", { customer: "acme", secret: envoy });
    const ready = await k.waitReady("rest");
    const oldId = String(ready.status?.key?.id);
    const oldToken = (await credentials("rest"))?.[oldId];
    const rotated = await svc.as(root).post(`/customers/acme/keys/${oldId}/rotate`, { gracePeriodSeconds: 600 });
    const { id: newId, keyId: newToken } = rotated.body as { id: number; keyId: string };
    await waitFor(async () => (await credentials("rest"))?.[String(newId)] !== undefined, { what: "the new key in the Secret" });
    expect(await credentials("rest")).toEqual({ [oldId]: oldToken, [String(newId)]: newToken });

    clock.advance(600_000);
    await operator.resync();
    await k.waitRotated("rest");
    expect(await credentials("rest")).toEqual({ [String(newId)]: newToken });
  });

  it("rewrites the Secret when the format switches, both ways", async () => {
    await k.createApiKey("switch", { customer: "acme" });
    const ready = await k.waitReady("switch");
    const id = String(ready.status?.key?.id);
    const token = (await credentials("switch"))?.apiKey;
    expect(await credentials("switch")).toEqual({ apiKey: token });

    await k.patchSpec("switch", { secret: envoy });
    await waitFor(async () => (await credentials("switch"))?.[id] !== undefined, { what: "the envoy-gateway form" });
    expect(await credentials("switch")).toEqual({ [id]: token });

    await k.patchSpec("switch", { secret: { format: "keyplane", key: "token" } });
    await waitFor(async () => (await credentials("switch"))?.token !== undefined, { what: "the keyplane form" });
    expect(await credentials("switch")).toEqual({ token });
    expect((await whoAmI(svc, token)).status).toBe(200);
  });

  it("takes the ApiKey of deploy/examples/envoy-gateway.yaml, and writes its Secret for Envoy Gateway", async () => {
    const docs = loadAll(await readFile(new URL("../../deploy/examples/envoy-gateway.yaml", import.meta.url), "utf8")) as ApiKey[];
    const example = docs.find((d) => d.kind === "ApiKey")!;
    await k.createApiKey(example.metadata.name ?? "", example.spec);
    const ready = await k.waitReady(example.metadata.name ?? "");
    const data = await credentials(example.spec.secret?.name ?? "");
    expect(Object.keys(data ?? {})).toEqual([String(ready.status?.key?.id)]);
  });
});
