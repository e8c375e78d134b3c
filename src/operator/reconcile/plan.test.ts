import type { V1Secret } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Scope } from "../../domain/scope/scope.ts";
import type { Action, ActionType } from "./actions.ts";
import { API_VERSION, FINALIZER, KIND, MANAGED_BY_LABEL, resolveSpec, type ApiKey, type ApiKeySpecInput, type ApiKeyStatus } from "../resource/apikey.ts";
import type { KeyRecord, KeyView, KeyWithToken } from "./keystore.ts";
import type { CustomerNames, NamespaceBinding } from "../resource/namespace-binding.ts";
import { failurePlan, plan, type Next, type Plan, type PlanInput } from "./plan.ts";
import { desiredSecret } from "../resource/secret.ts";
import type { ReadyReason } from "../resource/status.ts";
import type { Workload } from "../rotation/workloads.ts";

const NOW = new Date("2025-05-01T12:00:00.250Z");
const EARLIER = "2025-04-30T08:00:00Z";
const ISSUED_AT = new Date(EARLIER);
const UID = "5b0c7a4e-uid-of-billing";
const TOKEN = "XI0123456789ABCDEF0123456789AB7798";
const OTHER_TOKEN = "XIFFFFFFFFFFFFFFFFFFFFFFFFFFFF1111";
const SCOPE: Scope = { tenantId: 1, domainId: 10, applicationId: null, subscriberId: null };
const OTHER_SCOPE: Scope = { tenantId: 1, domainId: 11, applicationId: null, subscriberId: null };
const OWNER = "team-a/billing";
const ACME: CustomerNames = { id: 1, uuid: "0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10", name: "acme" };
const GLOBEX: CustomerNames = { id: 2, uuid: "5e2d8a41-0c7b-4f69-b3a2-91d4e6f8c725", name: "globex" };
const GLOBEX_SCOPE: Scope = { tenantId: 2, domainId: 20, applicationId: null, subscriberId: null };
/** keyplane.dev/customers of namespace team-a, as gather reads it. */
const lists = (...listed: string[]): NamespaceBinding => ({ kind: "listed", namespace: "team-a", listed });

function apiKey(spec: Partial<ApiKeySpecInput> = {}, meta: Partial<ApiKey["metadata"]> = {}, status?: ApiKeyStatus): ApiKey {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: "billing", namespace: "team-a", uid: UID, generation: 2, resourceVersion: "100", finalizers: [FINALIZER], ...meta },
    spec: { customer: "acme", domain: "sip.acme.example", ...spec } as ApiKey["spec"],
    ...(status ? { status } : {}),
  };
}

function key(over: Partial<KeyWithToken> = {}): KeyWithToken {
  return { id: 17, name: "billing", active: true, type: "customer", managedBy: OWNER, scope: SCOPE, replacedBy: null, token: TOKEN, issuedAt: ISSUED_AT, policy: null, ...over };
}

function view(k: KeyWithToken): KeyView {
  const { token: _token, issuedAt: _issuedAt, policy: _policy, ...rest } = k;
  return rest;
}

/** The Secret as the operator writes it, as the API server would hand it back (format keyplane: the key's id is not in it). */
function ownSecret(ak: ApiKey = apiKey(), token = TOKEN, edit: (s: V1Secret) => void = () => {}): V1Secret {
  const spec = resolveSpec(ak);
  if (!spec.ok) throw new Error(spec.message);
  const secret = structuredClone(desiredSecret(ak, spec.spec, { id: 17, token }));
  secret.metadata = { ...secret.metadata, uid: "secret-uid", resourceVersion: "7" };
  edit(secret);
  return secret;
}

function foreignSecret(name = "billing", extra: Partial<V1Secret["metadata"]> = {}): V1Secret {
  return { metadata: { name, namespace: "team-a", uid: "foreign-uid", resourceVersion: "3", ...extra }, type: "Opaque", data: { apiKey: "c2VjcmV0" } };
}

const readyStatus = (over: Partial<ApiKeyStatus> = {}): ApiKeyStatus => ({
  observedGeneration: 2,
  conditions: [{ type: "Ready", status: "True", reason: "Provisioned", message: "key XI…7798 is in Secret team-a/billing",
    lastTransitionTime: EARLIER, observedGeneration: 2 }],
  key: { id: 17, type: "customer", hint: "XI…7798" },
  secretName: "billing",
  ...over,
});

/** A status written for a reason a person must act on: Ready False and Stalled True. */
const notReadyStatus = (reason: ReadyReason, message: string): ApiKeyStatus => ({
  observedGeneration: 2,
  conditions: ["Ready", "Stalled"].map((type) => ({
    type, status: type === "Ready" ? "False" : "True", reason, message, lastTransitionTime: EARLIER, observedGeneration: 2,
  })),
});

/** Everything in place: the key, its Secret and a status that says so. */
function settled(over: Partial<PlanInput> = {}): PlanInput {
  const ak = over.apiKey ?? apiKey({}, {}, readyStatus());
  return {
    apiKey: ak,
    spec: resolveSpec(ak),
    binding: lists("acme"),
    customers: [ACME],
    scope: { found: true, scope: SCOPE },
    key: key(),
    managedKeys: [view(key())],
    secret: ownSecret(ak),
    ownedSecrets: [ownSecret(ak)],
    workloads: [],
    now: NOW,
    ...over,
  };
}

/** A fresh ApiKey: nothing provisioned yet. */
function fresh(over: Partial<PlanInput> = {}): PlanInput {
  const ak = over.apiKey ?? apiKey();
  return {
    apiKey: ak, binding: lists("acme"), customers: [ACME], scope: { found: true, scope: SCOPE }, key: undefined, managedKeys: [], secret: undefined, ownedSecrets: [], workloads: [], now: NOW,
    ...over,
    spec: resolveSpec(ak),
  };
}

const deleting = (spec: Partial<ApiKeySpecInput> = {}, meta: Partial<ApiKey["metadata"]> = {}) =>
  apiKey(spec, { deletionTimestamp: new Date(NOW), ...meta }, readyStatus());

interface Case {
  name: string;
  input: PlanInput;
  actions: ActionType[];
  next: Next;
  /** The Ready condition's reason; null when the plan sets no status. */
  ready: ReadyReason | null;
  also?: (p: Plan) => void;
}

const ofType = <T extends ActionType>(p: Plan, type: T) => p.actions.find((a): a is Extract<Action, { type: T }> => a.type === type);

/** A test per case: the plan's actions, what comes next, the Ready reason, then `check` and the case's own. */
function itPlans(cases: Case[], check?: (p: Plan, c: Case) => void) {
  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const p = plan(c.input);
    expect(p.actions.map((a) => a.type)).toEqual(c.actions);
    expect(p.next).toBe(c.next);
    expect(p.status?.conditions?.[0]?.reason ?? null).toBe(c.ready);
    check?.(p, c);
    c.also?.(p);
  });
}

const cases: Case[] = [
  // Provisioning
  {
    name: "adds the finalizer before it provisions a key for a new ApiKey",
    input: fresh({ apiKey: apiKey({}, { finalizers: undefined }) }),
    actions: ["addFinalizer", "provisionKey"], next: "replan", ready: null,
    also: (p) => expect(ofType(p, "provisionKey")).toMatchObject({ scope: SCOPE, name: "billing", active: true }),
  },
  {
    name: "provisions the key by scope and keyName, inactive when the spec says so",
    input: fresh({ apiKey: apiKey({ keyName: "billing-prod", active: false }) }),
    actions: ["provisionKey"], next: "replan", ready: null,
    also: (p) => expect(ofType(p, "provisionKey")).toMatchObject({ name: "billing-prod", active: false }),
  },
  {
    name: "re-provisions when the key was deleted through REST",
    input: settled({ key: undefined, managedKeys: [] }),
    actions: ["provisionKey"], next: "replan", ready: null,
  },
  {
    name: "writes the new token into the Secret once the key is provisioned again",
    input: settled({ key: key({ id: 18, token: OTHER_TOKEN }), managedKeys: [view(key({ id: 18 }))] }),
    actions: ["replaceSecret", "patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => {
      expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ apiKey: Buffer.from(OTHER_TOKEN).toString("base64") });
      expect(ofType(p, "replaceSecret")?.event?.message).toBe("Updated Secret team-a/billing");
    },
  },
  {
    name: "writes the Secret of a key provisioned just before a crash, with no second key",
    input: fresh({ key: key(), managedKeys: [view(key())] }),
    actions: ["createSecret", "patchStatus"], next: "done", ready: "Provisioned",
  },
  {
    name: "does nothing when the key, the Secret and the status are in place",
    input: settled(),
    actions: [], next: "done", ready: "Provisioned",
  },
  // Ownership of the key
  {
    name: "adopts a key made through REST",
    input: fresh({ key: key({ managedBy: null }) }),
    actions: ["claimKey"], next: "replan", ready: null,
  },
  {
    name: "re-adopts its own key after being deleted and re-created under the same name",
    input: fresh({ apiKey: apiKey({}, { uid: "new-uid" }), key: key(), managedKeys: [view(key())] }),
    actions: ["createSecret", "patchStatus"], next: "done", ready: "Provisioned",
  },
  {
    name: "never takes over a key another ApiKey manages",
    input: fresh({ key: key({ managedBy: "team-b/payments" }) }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "KeyConflict",
    also: (p) => {
      expect(p.status?.conditions?.[0]?.message).toContain("team-b/payments");
      expect(p.status?.key).toBeUndefined();
    },
  },
  {
    name: "does not repeat the KeyConflict warning nor rewrite an unchanged status",
    input: fresh({
      apiKey: apiKey({}, {}, notReadyStatus("KeyConflict", 'key "billing" of customer acme, domain sip.acme.example is managed by ApiKey team-b/payments')),
      key: key({ managedBy: "team-b/payments" }),
    }),
    actions: [], next: "retry", ready: "KeyConflict",
  },
  // Ownership of the Secret
  {
    name: "refuses a Secret it does not own, and provisions nothing",
    input: fresh({ secret: foreignSecret() }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "SecretConflict",
  },
  {
    name: "refuses a Secret owned by another ApiKey, even with the managed-by label",
    input: fresh({ secret: ownSecret(apiKey({}, { name: "other", uid: "other-uid" }), OTHER_TOKEN, (s) => (s.metadata!.name = "billing")) }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "SecretConflict",
  },
  // Scope and spec
  {
    name: "waits for a customer that does not exist yet",
    input: fresh({ scope: { found: false, missing: "customer", ref: "acme" } }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "ScopeNotFound",
    also: (p) => expect(p.status?.conditions?.[0]?.message).toBe('customer "acme" does not exist in keyplane'),
  },
  {
    name: "names the domain it could not find within its customer",
    input: fresh({ apiKey: apiKey({}, { finalizers: undefined }), scope: { found: false, missing: "domain", ref: "sip.acme.example" } }),
    actions: ["addFinalizer", "recordEvent", "patchStatus"], next: "retry", ready: "ScopeNotFound",
    also: (p) => expect(p.status?.conditions?.[0]?.message).toBe('domain "sip.acme.example" does not exist in keyplane (within customer acme)'),
  },
  {
    name: "reports a spec that breaks the scope rules, and touches nothing",
    input: fresh({ apiKey: apiKey({ domain: undefined, application: "ivr" }, { finalizers: undefined }), scope: undefined }),
    actions: ["recordEvent", "patchStatus"], next: "done", ready: "InvalidSpec",
    also: (p) => expect(p.status?.conditions?.[0]?.message).toMatch(/application needs domain/),
  },
  // Active
  {
    name: "deactivates the key when the spec says active: false",
    input: settled({ apiKey: apiKey({ active: false }, {}, readyStatus()) }),
    actions: ["setKeyActive"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "setKeyActive")).toMatchObject({ id: 17, active: false, event: { reason: "DeactivatedKey" } }),
  },
  {
    name: "re-activates a key disabled through REST: the spec wins",
    input: settled({ key: key({ active: false }) }),
    actions: ["setKeyActive"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "setKeyActive")).toMatchObject({ active: true }),
  },
  // The Secret
  {
    name: "writes the Secret with its owner reference, the managed-by label, and the spec's labels and annotations",
    input: fresh({
      apiKey: apiKey({ secret: { name: "billing-api-key", key: "token", labels: { app: "billing", [MANAGED_BY_LABEL]: "me" }, annotations: { note: "x" } } }),
      key: key(), managedKeys: [view(key())],
    }),
    actions: ["createSecret", "patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => {
      expect(ofType(p, "createSecret")?.secret).toEqual({
        apiVersion: "v1", kind: "Secret", type: "Opaque",
        metadata: {
          name: "billing-api-key", namespace: "team-a",
          labels: { app: "billing", [MANAGED_BY_LABEL]: "keyplane" },
          annotations: { note: "x" },
          ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: "billing", uid: UID, controller: true, blockOwnerDeletion: true }],
        },
        data: { token: Buffer.from(TOKEN).toString("base64") },
      });
      expect(ofType(p, "createSecret")?.event).toEqual({ type: "Normal", reason: "CreatedSecret", message: "Created Secret team-a/billing-api-key" });
    },
  },
  {
    name: "recreates a Secret deleted by hand",
    input: settled({ secret: undefined, ownedSecrets: [] }),
    actions: ["createSecret"], next: "done", ready: "Provisioned",
  },
  {
    name: "restores a Secret whose data was edited by hand, guarded by its resourceVersion",
    input: settled({ secret: ownSecret(undefined, TOKEN, (s) => (s.data = { apiKey: "ZWRpdGVk", extra: "eA==" })) }),
    actions: ["replaceSecret"], next: "done", ready: "Provisioned",
    also: (p) => {
      const s = ofType(p, "replaceSecret")?.secret;
      expect(s?.data).toEqual({ apiKey: Buffer.from(TOKEN).toString("base64") });
      expect(s?.metadata?.resourceVersion).toBe("7");
    },
  },
  {
    name: "restores the managed-by label and the owner reference removed by hand",
    input: settled({ secret: ownSecret(undefined, TOKEN, (s) => {
      s.metadata!.labels = {};
      s.metadata!.ownerReferences = [{ ...s.metadata!.ownerReferences![0]!, controller: false }];
    }) }),
    actions: ["replaceSecret"], next: "done", ready: "Provisioned",
    also: (p) => {
      const s = ofType(p, "replaceSecret")?.secret;
      expect(s?.metadata?.labels).toEqual({ [MANAGED_BY_LABEL]: "keyplane" });
      expect(s?.metadata?.ownerReferences).toEqual([expect.objectContaining({ uid: UID, controller: true, blockOwnerDeletion: true })]);
    },
  },
  {
    name: "keeps the owner references and finalizers of others when it restores a Secret",
    input: settled({ secret: ownSecret(undefined, TOKEN, (s) => {
      s.data = {};
      s.metadata!.finalizers = ["example.com/keep"];
      s.metadata!.ownerReferences!.unshift({ apiVersion: "v1", kind: "ConfigMap", name: "cm", uid: "cm-uid" });
    }) }),
    actions: ["replaceSecret"], next: "done", ready: "Provisioned",
    also: (p) => {
      const meta = ofType(p, "replaceSecret")?.secret.metadata;
      expect(meta?.finalizers).toEqual(["example.com/keep"]);
      expect(meta?.ownerReferences?.map((r) => r.uid)).toEqual(["cm-uid", UID]);
    },
  },
  {
    name: "updates the Secret when the spec's labels change",
    input: settled({ apiKey: apiKey({ secret: { labels: { tier: "gold" } } }, {}, readyStatus()), secret: ownSecret() }),
    also: (p) => expect(ofType(p, "replaceSecret")?.secret.metadata?.labels).toEqual({ tier: "gold", [MANAGED_BY_LABEL]: "keyplane" }),
    actions: ["replaceSecret"], next: "done", ready: "Provisioned",
  },
  {
    name: "recreates a Secret whose type was changed, since a type cannot be updated",
    input: settled({ secret: ownSecret(undefined, TOKEN, (s) => (s.type = "kubernetes.io/basic-auth")) }),
    actions: ["deleteSecret", "createSecret"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "deleteSecret")).toMatchObject({ name: "billing", uid: "secret-uid" }),
  },
  {
    name: "recreates an immutable Secret whose data is stale",
    input: settled({ key: key({ token: OTHER_TOKEN }), secret: ownSecret(undefined, TOKEN, (s) => (s.immutable = true)) }),
    actions: ["deleteSecret", "createSecret", "patchStatus"], next: "done", ready: "Provisioned",
  },
  // Spec changes
  {
    name: "renames its key back when it was renamed through REST",
    input: settled({ key: undefined, managedKeys: [view(key({ name: "renamed" }))] }),
    actions: ["renameKey"], next: "replan", ready: null,
    also: (p) => expect(ofType(p, "renameKey")).toMatchObject({ id: 17, name: "billing" }),
  },
  {
    name: "deletes the key it no longer asks for when the scope changed (Delete)",
    input: settled({ managedKeys: [view(key({ id: 5, scope: OTHER_SCOPE })), view(key())] }),
    actions: ["deleteKey"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "deleteKey")).toMatchObject({ id: 5, scope: OTHER_SCOPE }),
  },
  {
    name: "releases the key it no longer asks for when the scope changed (Retain)",
    input: settled({ apiKey: apiKey({ deletionPolicy: "Retain" }, {}, readyStatus()), managedKeys: [view(key({ id: 5, scope: OTHER_SCOPE })), view(key())] }),
    actions: ["releaseKey"], next: "done", ready: "Provisioned",
  },
  {
    name: "deletes the Secret it no longer writes when secret.name changed",
    input: settled({
      apiKey: apiKey({ secret: { name: "renamed" } }, {}, readyStatus({ secretName: "renamed" })),
      secret: undefined,
      ownedSecrets: [ownSecret()],
    }),
    actions: ["createSecret", "deleteSecret", "patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "deleteSecret")).toMatchObject({ name: "billing" }),
  },
  // Status
  {
    name: "records a new generation without moving lastTransitionTime while Ready stays True",
    input: settled({ apiKey: apiKey({}, { generation: 3 }, readyStatus()) }),
    actions: ["patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => {
      expect(p.status?.observedGeneration).toBe(3);
      expect(p.status?.conditions?.[0]).toMatchObject({ observedGeneration: 3, lastTransitionTime: EARLIER });
    },
  },
  {
    name: "moves lastTransitionTime when Ready flips, in whole seconds",
    input: settled({ apiKey: apiKey({}, {}, notReadyStatus("ScopeNotFound", "gone")) }),
    actions: ["patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => expect(p.status?.conditions?.[0]?.lastTransitionTime).toBe("2025-05-01T12:00:00Z"),
  },
  {
    name: "turns Ready again after a failure (reason Error) once everything is in place",
    input: settled({ apiKey: apiKey({}, {}, notReadyStatus("Error", "createSecret failed: 500")) }),
    actions: ["patchStatus"], next: "done", ready: "Provisioned",
  },
  // Deletion
  {
    name: "deletes its key and its Secret, then removes the finalizer (deletionPolicy Delete)",
    input: settled({ apiKey: deleting(), scope: undefined }),
    actions: ["deleteKey", "deleteSecret", "removeFinalizer"], next: "done", ready: null,
  },
  {
    name: "keeps its key in keyplane, released, and deletes the Secret (deletionPolicy Retain)",
    input: settled({ apiKey: deleting({ deletionPolicy: "Retain" }), scope: undefined }),
    actions: ["releaseKey", "deleteSecret", "removeFinalizer"], next: "done", ready: null,
  },
  {
    name: "deletes every Secret it owns, once each, when deleted",
    input: settled({ apiKey: deleting(), scope: undefined, ownedSecrets: [ownSecret(), ownSecret(undefined, TOKEN, (s) => {
      s.metadata!.name = "old";
      s.metadata!.uid = "old-uid";
    })] }),
    actions: ["deleteKey", "deleteSecret", "deleteSecret", "removeFinalizer"], next: "done", ready: null,
  },
  {
    name: "touches neither a key it does not manage nor a Secret it does not own when deleted",
    input: settled({ apiKey: deleting(), scope: undefined, key: key({ managedBy: "team-b/x" }), managedKeys: [], secret: foreignSecret(), ownedSecrets: [] }),
    actions: ["removeFinalizer"], next: "done", ready: null,
  },
  {
    name: "lets an ApiKey without its finalizer go",
    input: settled({ apiKey: deleting({}, { finalizers: ["other.example/f"] }), scope: undefined }),
    actions: [], next: "done", ready: null,
  },
  // The namespace's binding (keyplane.dev/customers)
  {
    name: "refuses an ApiKey whose namespace does not list its customer, with no finalizer, key nor Secret",
    input: fresh({ apiKey: apiKey({}, { finalizers: undefined }), binding: lists("globex"), customers: [ACME] }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
    also: (p) => {
      expect(p.status?.conditions?.[0]?.message).toBe('this ApiKey may not name customer "acme": the annotation keyplane.dev/customers of namespace team-a ' +
        "(\"globex\") does not list it. A cluster administrator allows it with: kubectl annotate namespace team-a --overwrite keyplane.dev/customers='globex,acme'");
      expect(ofType(p, "recordEvent")?.event).toMatchObject({ type: "Warning", reason: "NamespaceNotAllowed" });
    },
  },
  {
    name: "refuses an ApiKey in a namespace without the annotation",
    input: fresh({ binding: lists(), customers: [] }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
    also: (p) => expect(p.status?.conditions?.[0]?.message).toContain("namespace team-a has no annotation keyplane.dev/customers"),
  },
  {
    name: "does not adopt a key made through REST for a customer its namespace does not list",
    input: fresh({ key: key({ managedBy: null }), binding: lists("globex"), customers: [ACME] }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
  },
  {
    name: "refuses before it looks for the scope: the same answer whether the customer exists or not",
    input: fresh({ binding: lists("globex"), customers: [], scope: { found: false, missing: "customer", ref: "acme" } }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
  },
  {
    name: "refuses a customer named by id that the namespace does not list by any name",
    input: fresh({ apiKey: apiKey({ customer: "1" }), binding: lists("globex", "2"), customers: [ACME] }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
  },
  {
    name: "provisions for a customer its namespace lists by id",
    input: fresh({ binding: lists("globex", "1"), customers: [ACME] }),
    actions: ["provisionKey"], next: "replan", ready: null,
  },
  {
    name: "provisions for a customer its namespace lists by uuid, named by id in the spec",
    input: fresh({ apiKey: apiKey({ customer: "1" }), binding: lists(ACME.uuid.toUpperCase()), customers: [ACME] }),
    actions: ["provisionKey"], next: "replan", ready: null,
  },
  {
    name: "provisions for any customer in a namespace annotated `*`",
    input: fresh({ binding: { kind: "every", namespace: "team-a" }, customers: [] }),
    actions: ["provisionKey"], next: "replan", ready: null,
  },
  {
    name: "provisions for any customer with the binding lifted (KEYPLANE_NAMESPACE_BINDING=off)",
    input: fresh({ binding: { kind: "lifted" }, customers: [] }),
    actions: ["provisionKey"], next: "replan", ready: null,
  },
  {
    name: "waits for a customer the annotation lists but that does not exist yet",
    input: fresh({ binding: lists("ACME"), customers: [], scope: { found: false, missing: "customer", ref: "acme" } }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "ScopeNotFound",
  },
  {
    name: "changes nothing once the binding is removed: a spec change is not applied, the key is not shown",
    input: settled({ apiKey: apiKey({ active: false, secret: { key: "token" } }, {}, readyStatus()), binding: lists(), customers: [] }),
    actions: ["recordEvent", "patchStatus"], next: "retry", ready: "NamespaceNotAllowed",
    also: (p) => expect(p.status?.key).toBeUndefined(),
  },
  {
    name: "keeps a key of a customer the namespace no longer lists when the spec moved to one it lists",
    input: settled({
      apiKey: apiKey({ customer: "globex", domain: undefined }, {}, readyStatus()), binding: lists("globex"), customers: [GLOBEX, ACME],
      scope: { found: true, scope: GLOBEX_SCOPE }, key: key({ id: 18, scope: GLOBEX_SCOPE }),
      managedKeys: [view(key()), view(key({ id: 18, scope: GLOBEX_SCOPE }))],
    }),
    actions: ["patchStatus"], next: "done", ready: "Provisioned",
  },
  {
    name: "deletes the key it no longer asks for when the namespace lists both customers",
    input: settled({
      apiKey: apiKey({ customer: "globex", domain: undefined }, {}, readyStatus()), binding: lists("globex", "acme"), customers: [GLOBEX, ACME],
      scope: { found: true, scope: GLOBEX_SCOPE }, key: key({ id: 18, scope: GLOBEX_SCOPE }),
      managedKeys: [view(key()), view(key({ id: 18, scope: GLOBEX_SCOPE }))],
    }),
    actions: ["deleteKey", "patchStatus"], next: "done", ready: "Provisioned",
    also: (p) => expect(ofType(p, "deleteKey")).toMatchObject({ id: 17 }),
  },
  {
    name: "leaves its key alone when deleted while its namespace does not list the customer (Delete)",
    input: settled({ apiKey: deleting(), scope: undefined, binding: lists(), customers: [] }),
    actions: ["deleteSecret", "removeFinalizer"], next: "done", ready: null,
  },
  {
    name: "does not even release its key when deleted while its namespace lists another customer (Retain)",
    input: settled({ apiKey: deleting({ deletionPolicy: "Retain" }), scope: undefined, binding: lists("globex"), customers: [ACME] }),
    actions: ["deleteSecret", "removeFinalizer"], next: "done", ready: null,
  },
];

/** Stalled and Reconciling, as [type, status, reason]. */
function otherConditions(status: ApiKeyStatus): string[][] {
  return (status.conditions ?? []).slice(1).map((c) => [c.type, c.status, c.reason]);
}

/** What kstatus wants beside Ready: Stalled for what a person must fix, Reconciling while retrying. */
function kstatusOf(reason: string | null): string[][] {
  if (reason === null || reason === "Provisioned") return [];
  if (reason === "Error") return [["Reconciling", "True", reason]];
  return [["Stalled", "True", reason]];
}

describe("plan", () => {
  itPlans(cases, (p, c) => {
    if (p.status) expect(otherConditions(p.status)).toEqual(kstatusOf(c.ready));
  });

  it("shows the key's id, type and hint, and the Secret's name, in the status", () => {
    const p = plan(fresh({ key: key({ type: "application" }), managedKeys: [view(key())] }));
    expect(p.status).toEqual({
      observedGeneration: 2,
      conditions: [{ type: "Ready", status: "True", reason: "Provisioned", message: "key XI…7798 is in Secret team-a/billing",
        lastTransitionTime: "2025-05-01T12:00:00Z", observedGeneration: 2 }],
      key: { id: 17, type: "application", hint: "XI…7798" },
      secretName: "billing",
    });
  });

  it("never puts the whole token in the status nor in an event", () => {
    const inputs = [...cases.map((c) => c.input), fresh({ key: key() })];
    for (const input of inputs) {
      const p = plan(input);
      const shown = JSON.stringify([p.status, p.actions.map((a) => a.event)]);
      expect(shown).not.toContain(TOKEN);
      expect(shown).not.toContain(OTHER_TOKEN);
    }
  });

  it("is a function of its input: the same input gives the same plan", () => {
    for (const c of cases) expect(plan(structuredClone(c.input))).toEqual(plan(c.input));
  });
});

describe("failurePlan: the status after a failed action, by the same author", () => {
  it("turns Ready False with reason Error, keeps the key's hint, and warns once", () => {
    const failed = failurePlan(settled(), "createSecret failed: 500 etcd timeout");
    expect(failed.next).toBe("retry");
    expect(failed.status).toMatchObject({
      observedGeneration: 2,
      conditions: [
        { type: "Ready", status: "False", reason: "Error", message: "createSecret failed: 500 etcd timeout", lastTransitionTime: "2025-05-01T12:00:00Z" },
        { type: "Reconciling", status: "True", reason: "Error", observedGeneration: 2 },
      ],
      key: { id: 17, hint: "XI…7798" },
    });
    expect(failed.actions.map((a) => a.type)).toEqual(["recordEvent", "patchStatus"]);
    expect(failed.actions[0]).toMatchObject({ event: { type: "Warning", reason: "ReconcileError" } });

    const again = failurePlan(settled({ apiKey: apiKey({}, {}, failed.status) }), "createSecret failed: 500 etcd timeout");
    expect(again.actions).toEqual([]);
  });
});

describe("status.rotation", () => {
  it("shows the next rotation, every after the key was issued, and keeps what was recorded", () => {
    const ak = apiKey({ rotation: { every: "48h" } }, {}, readyStatus({ rotation: { lastRequest: "1", nextRotationTime: "2000-01-01T00:00:00Z" } }));
    const p = plan(settled({ apiKey: ak }));
    expect(p.status?.rotation).toEqual({ lastRequest: "1", nextRotationTime: "2025-05-02T08:00:00Z" });
    expect(p.actions.map((a) => a.type)).toEqual(["patchStatus"]);
    expect(p.requeueAt).toEqual(new Date("2025-05-02T08:00:00Z"));
  });

  it("is left out without spec.rotation nor anything recorded", () => {
    expect(plan(fresh({ key: key(), managedKeys: [view(key())] })).status?.rotation).toBeUndefined();
  });
});

describe("rotation", () => {
  const NEW_TOKEN = "XIABCDEF0123456789ABCDEF0123454242";
  const newKey = key({ id: 18, token: NEW_TOKEN, issuedAt: new Date("2025-05-01T11:59:00Z") });
  const STARTED = "2025-05-01T11:59:00Z";
  const GRACE_END = "2025-05-01T12:59:00Z";
  const underWay = (over: Partial<NonNullable<ApiKeyStatus["rotation"]>> = {}) =>
    readyStatus({ rotation: { lastRotationTime: STARTED, previousKey: { id: 17, hint: "XI…7798", expiresAt: GRACE_END }, ...over } });
  const restarting = { rotation: { every: "24h", gracePeriod: "1h", restartWorkloads: true } };

  function deployment(name: string, pod: object, marker?: string, rolled = false): Workload {
    const generation = marker ? 3 : 2;
    return {
      kind: "Deployment",
      object: {
        metadata: { name, namespace: "team-a", generation },
        spec: { replicas: 0, selector: {}, template: { metadata: { annotations: marker ? { "keyplane.dev/restartedAt": marker } : {} }, spec: { containers: [{ name: "app", ...pod }] } } },
        status: { observedGeneration: rolled || !marker ? generation : 2 },
      },
    };
  }
  const usesByEnv = { env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: "billing", key: "apiKey" } } }] };
  const usesOther = { envFrom: [{ secretRef: { name: "other" } }] };

  /** A rotation whose key store has made the new key. */
  function rotated(spec: Partial<ApiKeySpecInput>, status: ApiKeyStatus, over: Partial<PlanInput> = {}): PlanInput {
    const ak = apiKey(spec, {}, status);
    return settled({ apiKey: ak, key: newKey, managedKeys: [view({ ...key(), replacedBy: 18 }), view(newKey)], ...over });
  }

  it("records the rotation, guarded by the resourceVersion read, before the key store makes it", () => {
    const p = plan(settled({ apiKey: apiKey({ rotation: { every: "24h", gracePeriod: "1h" } }, {}, readyStatus()) }));
    expect(p.next).toBe("replan");
    expect(p.actions).toEqual([{
      type: "beginRotation",
      resourceVersion: "100",
      status: { ...readyStatus(), rotation: { lastRotationTime: "2025-05-01T12:00:00Z", previousKey: { id: 17, hint: "XI…7798", expiresAt: "2025-05-01T13:00:00Z" } } },
    }]);
  });

  it("rotates for a new annotation value with the default grace period, and records the value", () => {
    const ak = apiKey({}, { annotations: { "keyplane.dev/rotate": "2" } }, readyStatus({ rotation: { lastRequest: "1" } }));
    const p = plan(settled({ apiKey: ak }));
    expect(ofType(p, "beginRotation")?.status.rotation).toEqual({
      lastRequest: "2", lastRotationTime: "2025-05-01T12:00:00Z", previousKey: { id: 17, hint: "XI…7798", expiresAt: "2025-05-01T13:00:00Z" },
    });
  });

  it("records the annotation a new ApiKey was created with, without rotating its new key", () => {
    const ak = apiKey({}, { annotations: { "keyplane.dev/rotate": "1" } });
    const p = plan(settled({ apiKey: ak }));
    expect(p.actions.map((a) => a.type)).toEqual(["patchStatus"]);
    expect(p.status?.rotation).toEqual({ lastRequest: "1" });
  });

  it("has the key store rotate the recorded key, with what is left of its grace period", () => {
    const p = plan(settled({ apiKey: apiKey(restarting, {}, underWay()) }));
    expect(p.next).toBe("replan");
    expect(p.actions).toEqual([expect.objectContaining({ type: "rotateKey", id: 17, gracePeriodSeconds: 3539, event: expect.objectContaining({ reason: "Rotated" }) })]);
  });

  it("writes the new key, then restarts each workload that reads the Secret once, and waits for their rollout", () => {
    const workloads = [deployment("api", usesByEnv), deployment("worker", usesByEnv, STARTED), deployment("unrelated", usesOther)];
    const p = plan(rotated(restarting, underWay(), { workloads }));
    expect(p.actions.map((a) => a.type)).toEqual(["replaceSecret", "restartWorkload", "patchStatus"]);
    expect(ofType(p, "restartWorkload")).toMatchObject({ kind: "Deployment", name: "api", marker: STARTED, event: { reason: "RestartedWorkload" } });
    expect(p.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([["Ready", "True", "Provisioned"], ["Reconciling", "True", "Rotating"]]);
    expect(p.status?.conditions?.[1]?.message).toBe(`waiting for the restarted workloads to roll out; the replaced key XI…7798 is retired by ${GRACE_END} at the latest`);
    expect(p.status?.rotation?.previousKey?.id).toBe(17);
    expect(p.requeueAt).toEqual(new Date(GRACE_END));
    // The replaced key is not dropped as a key no longer asked for: it ends with its rotation.
    expect(ofType(p, "deleteKey")).toBeUndefined();
  });

  it("retires the replaced key as soon as every restarted workload has rolled out", () => {
    const workloads = [deployment("api", usesByEnv, STARTED, true), deployment("unrelated", usesOther)];
    const p = plan(rotated(restarting, underWay(), { secret: ownSecret(apiKey(restarting), NEW_TOKEN), workloads }));
    expect(p.actions.map((a) => a.type)).toEqual(["retireKey", "patchStatus"]);
    expect(ofType(p, "retireKey")).toMatchObject({ id: 17, event: { type: "Normal", reason: "RetiredKey" } });
    expect(p.status?.rotation).toEqual({ lastRotationTime: STARTED, nextRotationTime: "2025-05-02T11:59:00Z" });
    expect(p.status?.conditions?.map((c) => c.type)).toEqual(["Ready"]);
  });

  it("retires the replaced key at the grace period's end though a rollout hangs, with a warning", () => {
    const workloads = [deployment("api", usesByEnv, STARTED, false)];
    const p = plan(rotated(restarting, underWay(), { secret: ownSecret(apiKey(restarting), NEW_TOKEN), workloads, now: new Date(GRACE_END) }));
    expect(ofType(p, "retireKey")?.event).toMatchObject({ type: "Warning", reason: "RetiredKey" });
    expect(ofType(p, "retireKey")?.event?.message).toContain("before Deployment team-a/api rolled out");
  });

  it("without restartWorkloads, keeps the replaced key for the whole grace period", () => {
    const spec = { rotation: { every: "24h", gracePeriod: "1h" } };
    const waiting = plan(rotated(spec, underWay(), { secret: ownSecret(apiKey(spec), NEW_TOKEN), workloads: [deployment("api", usesByEnv)] }));
    expect(waiting.actions.map((a) => a.type)).toEqual(["patchStatus"]);
    expect(waiting.requeueAt).toEqual(new Date(GRACE_END));
    const ended = plan(rotated(spec, underWay(), { secret: ownSecret(apiKey(spec), NEW_TOKEN), now: new Date(GRACE_END) }));
    expect(ofType(ended, "retireKey")?.event).toMatchObject({ type: "Normal", message: "Retired key XI…7798: its grace period ended" });
  });

  it("finishes the rotation under way before acting on a new annotation value", () => {
    const ak = apiKey(restarting, { annotations: { "keyplane.dev/rotate": "again" } }, underWay());
    const p = plan(rotated(restarting, underWay(), { apiKey: ak, secret: ownSecret(ak, NEW_TOKEN) }));
    expect(ofType(p, "beginRotation")).toBeUndefined();
    expect(ofType(p, "rotateKey")).toBeUndefined();
  });
});

describe("spec.policy", () => {
  const POLICY = { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }], credits: { remaining: 1000 } };
  const withPolicy = (policy: object) => apiKey({ policy } as Partial<ApiKeySpecInput>, {}, readyStatus());

  const cases: Case[] = [
    {
      name: "provisions the key with the spec's policy",
      input: fresh({ apiKey: apiKey({ policy: POLICY } as Partial<ApiKeySpecInput>) }),
      actions: ["provisionKey"], next: "replan", ready: null,
      also: (p) => expect(ofType(p, "provisionKey")?.policy).toEqual(POLICY),
    },
    {
      name: "leaves a policy that is the spec's alone, the order of its fields aside",
      input: settled({ apiKey: withPolicy(POLICY), key: key({ policy: { credits: { remaining: 1000 }, ratelimits: [{ windowSeconds: 1, limit: 100, name: "calls" }] } }) }),
      actions: [], next: "done", ready: "Provisioned",
    },
    {
      name: "puts back a policy changed through REST, keeping the credits' balance when credits.remaining is the spec's",
      input: settled({ apiKey: withPolicy(POLICY), key: key({ policy: { ...POLICY, ratelimits: [{ name: "calls", limit: 5000, windowSeconds: 1 }] } }) }),
      actions: ["setKeyPolicy"], next: "done", ready: "Provisioned",
      also: (p) => {
        expect(ofType(p, "setKeyPolicy")).toMatchObject({ id: 17, policy: POLICY, balance: "keep", event: { reason: "UpdatedKeyPolicy" } });
        expect(ofType(p, "setKeyPolicy")?.event?.message).toBe('Set the policy of key "billing" as the spec says, its credits\' balance kept');
      },
    },
    {
      name: "sets the balance again when the spec's credits.remaining changed",
      input: settled({ apiKey: withPolicy({ ...POLICY, credits: { remaining: 5000 } }), key: key({ policy: POLICY }) }),
      actions: ["setKeyPolicy"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "setKeyPolicy")).toMatchObject({ policy: { credits: { remaining: 5000 } }, balance: "reset" }),
    },
    {
      name: "gives a key made without credits the spec's, from their remaining",
      input: settled({ apiKey: withPolicy(POLICY), key: key({ policy: null }) }),
      actions: ["setKeyPolicy"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "setKeyPolicy")).toMatchObject({ policy: POLICY, balance: "reset" }),
    },
    {
      name: "removes a policy set through REST on a key whose spec has none",
      input: settled({ key: key({ policy: POLICY }) }),
      actions: ["setKeyPolicy"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "setKeyPolicy")).toMatchObject({ policy: null }),
    },
    {
      name: "reports a policy the domain refuses as InvalidSpec, and touches nothing",
      input: fresh({ apiKey: withPolicy({ restrictions: { ips: ["203.0.113.0/33"] } }), scope: undefined, key: key({ policy: POLICY }), managedKeys: [view(key())], secret: ownSecret() }),
      actions: ["recordEvent", "patchStatus"], next: "done", ready: "InvalidSpec",
      also: (p) => expect(p.status?.conditions?.[0]?.message).toMatch(/^spec\.policy: restrictions\.ips\[0\]: /),
    },
  ];

  itPlans(cases);
});

describe("spec.secret.format envoy-gateway", () => {
  const NEW_TOKEN = "XIABCDEF0123456789ABCDEF0123454242";
  const envoy = { secret: { format: "envoy-gateway" as const } };
  const b64 = (t: string) => Buffer.from(t).toString("base64");
  const underWay = readyStatus({ rotation: { lastRotationTime: "2025-05-01T11:59:00Z", previousKey: { id: 17, hint: "XI…7798", expiresAt: "2025-05-01T12:59:00Z" } } });
  const newKey = key({ id: 18, token: NEW_TOKEN, issuedAt: new Date("2025-05-01T11:59:00Z") });
  const secretOf = (ak: ApiKey, held: Array<{ id: number; token: string }>) => {
    const spec = resolveSpec(ak);
    if (!spec.ok) throw new Error(spec.message);
    return { ...desiredSecret(ak, spec.spec, held.at(-1)!, held.length > 1 ? held[0] : undefined), metadata: { ...desiredSecret(ak, spec.spec, held[0]!).metadata, resourceVersion: "7" } };
  };

  const cases: Case[] = [
    {
      name: "writes each live key's numeric id to its token, for Envoy Gateway's apiKeyAuth",
      input: fresh({ apiKey: apiKey(envoy), key: key(), managedKeys: [view(key())] }),
      actions: ["createSecret", "patchStatus"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "createSecret")?.secret.data).toEqual({ 17: b64(TOKEN) }),
    },
    {
      name: "holds both keys while the replaced one is in its grace period",
      input: settled({ apiKey: apiKey(envoy, {}, underWay), key: newKey, previousKey: key(), managedKeys: [view(newKey)], secret: secretOf(apiKey(envoy), [{ id: 17, token: TOKEN }]) }),
      actions: ["replaceSecret", "patchStatus"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ 17: b64(TOKEN), 18: b64(NEW_TOKEN) }),
    },
    {
      name: "drops the replaced key's entry in the plan that retires it",
      input: settled({
        apiKey: apiKey(envoy, {}, underWay), key: newKey, previousKey: key(), managedKeys: [view(newKey)], now: new Date("2025-05-01T12:59:00Z"),
        secret: secretOf(apiKey(envoy), [{ id: 17, token: TOKEN }, { id: 18, token: NEW_TOKEN }]),
      }),
      actions: ["replaceSecret", "retireKey", "patchStatus"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ 18: b64(NEW_TOKEN) }),
    },
    {
      name: "drops the entry of a replaced key that expired before it was retired",
      input: settled({ apiKey: apiKey(envoy, {}, underWay), key: newKey, previousKey: undefined, managedKeys: [view(newKey)],
        secret: secretOf(apiKey(envoy), [{ id: 17, token: TOKEN }, { id: 18, token: NEW_TOKEN }]) }),
      actions: ["replaceSecret", "patchStatus"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ 18: b64(NEW_TOKEN) }),
    },
    {
      name: "empties an envoy-gateway Secret while the spec says active: false: Envoy checks nothing else",
      input: settled({ apiKey: apiKey({ ...envoy, active: false }, {}, readyStatus()), secret: secretOf(apiKey(envoy), [{ id: 17, token: TOKEN }]) }),
      actions: ["setKeyActive", "replaceSecret"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({}),
    },
    {
      name: "rewrites the Secret when the format switches to envoy-gateway",
      input: settled({ apiKey: apiKey(envoy, {}, readyStatus()), secret: ownSecret() }),
      actions: ["replaceSecret"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ 17: b64(TOKEN) }),
    },
    {
      name: "rewrites the Secret when the format switches back to keyplane",
      input: settled({ secret: secretOf(apiKey(envoy), [{ id: 17, token: TOKEN }]) }),
      actions: ["replaceSecret"], next: "done", ready: "Provisioned",
      also: (p) => expect(ofType(p, "replaceSecret")?.secret.data).toEqual({ apiKey: b64(TOKEN) }),
    },
  ];

  itPlans(cases);
});

describe("a rotation made elsewhere (REST, a leak report)", () => {
  const NEW_TOKEN = "XIABCDEF0123456789ABCDEF0123454242";
  const ISSUED = "2025-05-01T11:59:30Z";
  const GRACE_END = new Date("2025-05-01T13:00:00.500Z");
  const newKey = key({ id: 18, token: NEW_TOKEN, issuedAt: new Date(ISSUED) });
  const replaced: KeyRecord = { ...view(key()), replacedBy: 18, hint: "XI…7798", expiresAt: GRACE_END, deleted: false };
  const restarting = { rotation: { every: "720h", gracePeriod: "1h", restartWorkloads: true } };
  const workload = (marker?: string, rolled = false): Workload => ({
    kind: "Deployment",
    object: {
      metadata: { name: "api", namespace: "team-a", generation: marker ? 3 : 2 },
      spec: { replicas: 0, selector: {}, template: { metadata: { annotations: marker ? { "keyplane.dev/restartedAt": marker } : {} },
        spec: { containers: [{ name: "app", envFrom: [{ secretRef: { name: "billing" } }] }] } } },
      status: { observedGeneration: rolled || !marker ? (marker ? 3 : 2) : 2 },
    },
  });
  /** The key store has rotated the key; the ApiKey's status still shows the replaced one. */
  const unfollowed = (over: Partial<PlanInput> = {}) => settled({
    apiKey: apiKey(restarting, {}, readyStatus()), key: newKey, managedKeys: [view(newKey)], rotatedElsewhere: replaced, workloads: [workload()], ...over,
  });
  const followed = readyStatus({ rotation: { lastRotationTime: ISSUED, previousKey: { id: 17, hint: "XI…7798", expiresAt: "2025-05-01T13:00:00Z" } } });

  it("records it as a rotation under way, with the grace period it gave the replaced key, before anything else", () => {
    const p = plan(unfollowed());
    expect(p.next).toBe("replan");
    expect(p.actions).toEqual([{
      type: "beginRotation", resourceVersion: "100",
      status: { ...readyStatus(), rotation: { lastRotationTime: ISSUED, previousKey: { id: 17, hint: "XI…7798", expiresAt: "2025-05-01T13:00:00Z" } } },
      event: { type: "Normal", reason: "Rotated", message: 'Key "billing" was rotated outside this ApiKey: a new key replaces XI…7798, which works until 2025-05-01T13:00:00Z at the latest' },
    }]);
  });

  it("records the same rotation time whenever it is recorded: the restart marker is the new key's issue time", () => {
    const later = plan(unfollowed({ now: new Date("2025-05-01T12:30:00Z") }));
    expect(ofType(later, "beginRotation")?.status.rotation?.lastRotationTime).toBe(ISSUED);
  });

  it("records a replaced key that expired or was deleted already with a grace period that has ended", () => {
    for (const gone of [{ expiresAt: new Date("2025-05-01T11:59:30Z") }, { deleted: true }]) {
      const p = plan(unfollowed({ rotatedElsewhere: { ...replaced, ...gone } }));
      expect(ofType(p, "beginRotation")?.status.rotation?.previousKey?.expiresAt).toBe("2025-05-01T12:00:00Z");
    }
  });

  it("then writes the new token, restarts each workload that reads the Secret once, and shows Reconciling while they roll out", () => {
    const p = plan(unfollowed({ apiKey: apiKey(restarting, {}, followed), rotatedElsewhere: undefined, previousKey: key() }));
    expect(p.actions.map((a) => a.type)).toEqual(["replaceSecret", "restartWorkload", "patchStatus"]);
    expect(ofType(p, "restartWorkload")).toMatchObject({ name: "api", marker: ISSUED });
    expect(p.status?.key).toEqual({ id: 18, type: "customer", hint: "XI…4242" });
    expect(p.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([["Ready", "True", "Provisioned"], ["Reconciling", "True", "Rotating"]]);
    expect(p.status?.rotation?.previousKey?.id).toBe(17);
  });

  it("retires the replaced key as soon as the workloads have rolled out", () => {
    const ak = apiKey(restarting, {}, followed);
    const p = plan(unfollowed({ apiKey: ak, rotatedElsewhere: undefined, previousKey: key(), workloads: [workload(ISSUED, true)], secret: ownSecret(ak, NEW_TOKEN) }));
    expect(p.actions.map((a) => a.type)).toEqual(["retireKey", "patchStatus"]);
    expect(ofType(p, "retireKey")).toMatchObject({ id: 17, event: { type: "Normal", reason: "RetiredKey" } });
    expect(p.status?.rotation).toEqual({ lastRotationTime: ISSUED, nextRotationTime: "2025-05-31T11:59:30Z" });
  });

  it("without restartWorkloads, leaves the replaced key its whole grace period", () => {
    const ak = apiKey({}, {}, followed);
    const p = plan(unfollowed({ apiKey: ak, rotatedElsewhere: undefined, previousKey: key(), secret: ownSecret(ak, NEW_TOKEN) }));
    expect(p.actions.map((a) => a.type)).toEqual(["patchStatus"]);
    expect(p.requeueAt).toEqual(new Date("2025-05-01T13:00:00Z"));
  });

  it("keeps showing the replaced key when a failure is reported before the rotation is recorded", () => {
    const failed = failurePlan(unfollowed(), "beginRotation failed: 500");
    expect(failed.status?.key).toEqual({ id: 17, type: "customer", hint: "XI…7798" });
    expect(failed.status?.rotation).toBeUndefined();
  });

  it("is not started again by a rotation request of its own while it is followed", () => {
    const ak = apiKey(restarting, { annotations: { "keyplane.dev/rotate": "x" } }, followed);
    const p = plan(unfollowed({ apiKey: ak, rotatedElsewhere: undefined, previousKey: key() }));
    expect(ofType(p, "beginRotation")).toBeUndefined();
    expect(ofType(p, "rotateKey")).toBeUndefined();
  });
});
