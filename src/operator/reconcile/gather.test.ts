import { describe, expect, it } from "vitest";
import type { Scope } from "../../domain/scope/scope.ts";
import { API_VERSION, KIND, type ApiKey, type ApiKeyStatus } from "../resource/apikey.ts";
import { gather, type GatherDeps } from "./gather.ts";
import type { KubeApi } from "../kube/kube-api.ts";
import type { KeyRecord, KeyStore, KeyWithToken } from "./keystore.ts";

// What gather reads of the key store to see a rotation made elsewhere: the chain of replacements from
// the key the status shows to the key that holds the name now.

const SCOPE: Scope = { tenantId: 1, domainId: null, applicationId: null, subscriberId: null };
const OWNER = "team-a/billing";

function record(id: number, replacedBy: number | null, over: Partial<KeyRecord> = {}): KeyRecord {
  return { id, name: "billing", active: true, type: "customer", managedBy: OWNER, scope: SCOPE, replacedBy, hint: `XI…${id}`, expiresAt: null, deleted: false, ...over };
}

function current(id: number): KeyWithToken {
  const { hint: _hint, expiresAt: _expiresAt, deleted: _deleted, ...view } = record(id, null);
  return { ...view, token: `XI${id}`, issuedAt: new Date(0), policy: null };
}

function apiKey(status: ApiKeyStatus): ApiKey {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name: "billing", namespace: "team-a", uid: "u" }, spec: { customer: "acme" } as ApiKey["spec"], status };
}

/** gather over a key store that holds `records`, the live key being `live`; counts findEver calls. */
async function gathered(status: ApiKeyStatus, live: number, records: KeyRecord[]) {
  const reads: number[] = [];
  const byId = new Map(records.map((r) => [r.id, r]));
  const store = {
    resolveScope: async () => ({ found: true, scope: SCOPE }),
    findKey: async () => current(live),
    findLive: async ({ id }: { id: number }) => (byId.get(id)?.deleted ? undefined : current(id)),
    findEver: async (id: number) => (reads.push(id), byId.get(id)),
    listManaged: async () => [],
  } as unknown as KeyStore;
  const cache = { apiKey: () => apiKey(status), namespace: () => undefined, managedSecret: () => undefined, ownedSecrets: () => [], workloads: () => [] };
  const kube = { readSecret: async () => undefined, readApiKey: async () => apiKey(status) } as unknown as KubeApi;
  const deps: GatherDeps = { store, kube, cache, clock: () => new Date(0), namespaceBinding: false };
  const input = await gather(deps, { namespace: "team-a", name: "billing" });
  return { input, reads };
}

const shows = (id: number): ApiKeyStatus => ({ key: { id, type: "customer", hint: `XI…${id}` } });

describe("gather: a rotation made elsewhere", () => {
  it("is the key the status shows, when it was replaced by the live key", async () => {
    const { input } = await gathered(shows(17), 18, [record(17, 18)]);
    expect(input?.rotatedElsewhere?.id).toBe(17);
  });

  it("follows a chain of rotations to the key the live key replaced", async () => {
    const { input } = await gathered(shows(17), 19, [record(17, 18), record(18, 19)]);
    expect(input?.rotatedElsewhere?.id).toBe(18);
  });

  it("is none when the key the status shows was deleted and a new one provisioned", async () => {
    const { input } = await gathered(shows(17), 18, [record(17, null, { deleted: true })]);
    expect(input?.rotatedElsewhere).toBeUndefined();
  });

  it("is not looked for while the status shows the live key, nor while a rotation is under way", async () => {
    expect((await gathered(shows(18), 18, [record(17, 18)])).reads).toEqual([]);
    const underWay = { ...shows(17), rotation: { previousKey: { id: 17, hint: "XI…17", expiresAt: "2025-01-01T00:00:00Z" } } };
    const { input, reads } = await gathered(underWay, 18, [record(17, 18)]);
    expect(reads).toEqual([]);
    expect(input?.previousKey?.id).toBe(17);
  });

  it("gives up after a few rotations, rather than walk a long chain on every reconcile", async () => {
    const chain = Array.from({ length: 10 }, (_, i) => record(10 + i, 11 + i));
    const { input, reads } = await gathered(shows(10), 20, chain);
    expect(input?.rotatedElsewhere).toBeUndefined();
    expect(reads.length).toBeLessThanOrEqual(6);
  });
});

describe("gather: the namespace's binding", () => {
  const ACME = { id: 1, uuid: "0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10", name: "acme" };
  const GLOBEX = { id: 2, uuid: "5e2d8a41-0c7b-4f69-b3a2-91d4e6f8c725", name: "globex" };
  const byRef = new Map<string, typeof ACME>([["acme", ACME], ["1", ACME], ["2", GLOBEX]]);

  /** gather with the binding on, the namespace team-a annotated as given, cached or only on the API server. */
  async function bound(annotation: string | undefined, { cached = true, managed = [] as Scope[] } = {}) {
    const lookedUp: string[] = [];
    const namespace = { metadata: { name: "team-a", ...(annotation === undefined ? {} : { annotations: { "keyplane.dev/customers": annotation } }) } };
    const store = {
      resolveScope: async () => ({ found: true, scope: SCOPE }),
      findKey: async () => undefined,
      listManaged: async () => managed.map((scope, i) => ({ ...record(40 + i, null), scope })),
      findCustomer: async (ref: string) => (lookedUp.push(ref), byRef.get(ref)),
    } as unknown as KeyStore;
    const cache = { apiKey: () => apiKey({}), namespace: () => (cached ? namespace : undefined), managedSecret: () => undefined, ownedSecrets: () => [], workloads: () => [] };
    const kube = { readSecret: async () => undefined, readNamespace: async () => namespace } as unknown as KubeApi;
    const input = await gather({ store, kube, cache, clock: () => new Date(0), namespaceBinding: true }, { namespace: "team-a", name: "billing" });
    return { input, lookedUp };
  }

  it("reads the annotation from the cache, with the customers of the spec and of the keys it manages", async () => {
    const { input, lookedUp } = await bound("acme, globex", { managed: [SCOPE, { ...SCOPE, tenantId: 2 }] });
    expect(input?.binding).toEqual({ kind: "listed", namespace: "team-a", listed: ["acme", "globex"] });
    expect(input?.customers).toEqual([ACME, GLOBEX]);
    expect(lookedUp).toEqual(["acme", "2"]);
  });

  it("reads a namespace the cache does not hold yet from the API server", async () => {
    expect((await bound("*", { cached: false })).input?.binding).toEqual({ kind: "every", namespace: "team-a" });
  });

  it("looks up no customer where nothing is listed to match them against", async () => {
    for (const annotation of [undefined, "*"]) expect((await bound(annotation)).lookedUp).toEqual([]);
  });
});
