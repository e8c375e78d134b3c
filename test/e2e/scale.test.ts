// 200 ApiKeys applied at once: all reach Ready, each with its own key and Secret, and a resync after
// that writes nothing (counted by the fault proxy in front of the operator).
import { beforeAll, expect, it } from "vitest";
import { GROUP, MANAGED_BY_LABEL, PLURAL, CRD_VERSION, type ApiKey } from "../../src/operator/resource/apikey.ts";
import type { Operator } from "../../src/operator/start.ts";
import { describeKube, useKube } from "../support/kube-suite.ts";
import type { FaultProxy } from "../support/fault-proxy.ts";
import { waitFor } from "../support/kube.ts";
import type { TestService } from "../support/service.ts";
import { useOperatorBehindProxy, writesBy, type Cluster } from "./operator-fixture.ts";

const COUNT = 200;

describeKube("operator at scale", () => {
  const kube = useKube({ withControllerManager: false });
  const env = useOperatorBehindProxy(kube, "scale");
  let svc: TestService;
  let proxy: FaultProxy;
  let operator: Operator;
  let k: Cluster;

  beforeAll(() => {
    ({ svc, proxy, operator, k } = env());
  });

  const readyCount = async () => {
    const list = (await k.objects.listNamespacedCustomObject({ group: GROUP, version: CRD_VERSION, plural: PLURAL, namespace: k.namespace })) as { items: ApiKey[] };
    return list.items.filter((a) => a.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;
  };

  it(`brings ${COUNT} ApiKeys applied at once to Ready, each with its own Secret, and a resync then writes nothing`, async () => {
    const names = Array.from({ length: COUNT }, (_, i) => `svc-${String(i).padStart(3, "0")}`);
    const start = performance.now();
    // Applied as fast as the API server takes them, 20 requests at a time.
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(names.slice(i, i + 20).map((name) => k.createApiKey(name, { customer: "acme" })));
    }
    const applied = performance.now() - start;
    await waitFor(async () => (await readyCount()) === COUNT, { timeoutMs: 150_000, intervalMs: 500, what: `${COUNT} ApiKeys Ready` });
    const allReady = performance.now() - start;

    const secrets = await k.core.listNamespacedSecret({ namespace: k.namespace, labelSelector: `${MANAGED_BY_LABEL}=keyplane` });
    const tokens = new Set(secrets.items.map((s) => s.data?.apiKey));
    expect(secrets.items.map((s) => s.metadata?.name).sort()).toEqual(names);
    expect(tokens.size).toBe(COUNT);
    const keys = await svc.ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys WHERE managed_by LIKE $1", [`${k.namespace}/%`]);
    expect(keys[0]?.n).toBe(COUNT);

    // The echoes of its own writes (watch events of the Secrets and statuses) handled first.
    await operator.idle();
    await operator.resync();
    proxy.resetCounts();
    const resyncStart = performance.now();
    await operator.resync();
    const resync = performance.now() - resyncStart;
    const writes = writesBy(proxy.counts());
    const { leases = 0, ...others } = writes;
    console.log(`[scale] ${COUNT} ApiKeys: applied in ${Math.round(applied)} ms, all Ready after ${Math.round(allReady)} ms; ` +
      `resync of all took ${Math.round(resync)} ms with writes ${JSON.stringify(others)} (+${leases} Lease renewals), ` +
      `reads ${JSON.stringify({ get: proxy.counts().get ?? {}, list: proxy.counts().list ?? {} })}`);
    // The only writes during a resync are the Lease renewals that go on whatever happens.
    expect(others).toEqual({});
  }, 240_000);
});
