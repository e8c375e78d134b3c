// deploy/ as a user applies it: `kubectl kustomize deploy/` renders, and what it renders and the
// example pass `kubectl apply --dry-run=server` on a real API server. On a throwaway control plane,
// the RBAC is also applied for real and checked against every call the operator makes.
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { CoreV1Api, loadAllYaml } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeKube, kubeTarget, useKube } from "../support/kube-suite.ts";
import { apiStatusCode, createTestNamespace, deleteTestNamespace } from "../support/kube.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const SYSTEM_NAMESPACE = "keyplane-system";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function kubectl(args: string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", args, { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

const ok = (run: Run) => {
  expect(run.stderr, run.stderr).not.toMatch(/error/i);
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
};

type Doc = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

describeKube("deploy/", () => {
  const kube = useKube({ withControllerManager: false });
  let rendered: string;
  let createdSystemNamespace = false;
  const cli = (...args: string[]) => ["--kubeconfig", kube().kubeconfigPath, ...args];

  beforeAll(async () => {
    rendered = ok(await kubectl(["kustomize", "deploy/"]));
    // A server-side dry run of namespaced objects needs their namespace to exist for real.
    const core = kube().kubeConfig.makeApiClient(CoreV1Api);
    try {
      await core.readNamespace({ name: SYSTEM_NAMESPACE });
    } catch (error) {
      if (apiStatusCode(error) !== 404) throw error;
      await core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } });
      createdSystemNamespace = true;
    }
  });
  afterAll(async () => {
    if (createdSystemNamespace) await deleteTestNamespace(kube().kubeConfig, SYSTEM_NAMESPACE);
  });

  it("renders with kubectl kustomize: every object, in keyplane-system", () => {
    const docs = loadAllYaml(rendered) as Doc[];
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
      "ClusterRole/keyplane-operator", "ClusterRoleBinding/keyplane-operator", "CustomResourceDefinition/apikeys.keyplane.dev",
      "Deployment/keyplane", "Namespace/keyplane-system", "PodDisruptionBudget/keyplane", "Role/keyplane-leader-election",
      "RoleBinding/keyplane-leader-election", "Service/keyplane", "ServiceAccount/keyplane",
    ]);
    for (const doc of docs) {
      if (!["Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"].includes(doc.kind)) expect(doc.metadata.namespace).toBe(SYSTEM_NAMESPACE);
    }
  });

  it("passes kubectl apply --dry-run=server", async () => {
    const served = ok(await kubectl(cli("api-versions"))).split("\n");
    let docs = rendered.split(/^---$/m);
    if (!served.includes("policy/v1")) {
      // deploy/poddisruptionbudget.yaml is policy/v1, served from Kubernetes 1.21: this server is older
      // (envtest runs 1.20), so that one object is left out here; on a newer server it is applied too.
      console.warn("[deploy] the API server does not serve policy/v1: the PodDisruptionBudget is not dry-run");
      docs = docs.filter((d) => !/^kind: PodDisruptionBudget$/m.test(d));
    }
    // kubectl validates against the server's OpenAPI before sending; servers before 1.25 do not know the
    // CRD's x-kubernetes-validations (CEL), which they accept and ignore. There, the CRD alone goes
    // without kubectl's own check; the server's dry run still validates it.
    const version = JSON.parse(ok(await kubectl(cli("version", "-o", "json")))) as { serverVersion: { minor: string } };
    const knowsCel = Number.parseInt(version.serverVersion.minor, 10) >= 25;
    const isCrd = (d: string) => /^kind: CustomResourceDefinition$/m.test(d);
    let out = ok(await kubectl(cli("apply", "--dry-run=server", "-f", "-"), docs.filter((d) => knowsCel || !isCrd(d)).join("---\n")));
    if (!knowsCel) out += ok(await kubectl(cli("apply", "--dry-run=server", "--validate=false", "-f", "-"), docs.filter(isCrd).join("---\n")));
    expect(out).toMatch(/deployment\.apps\/keyplane (created|configured|unchanged) \(server dry run\)/);
    expect(out).toMatch(/customresourcedefinition\.apiextensions\.k8s\.io\/apikeys\.keyplane\.dev (created|configured|unchanged) \(server dry run\)/);
  });

  it("has an example that passes kubectl apply --dry-run=server", async () => {
    const namespace = await createTestNamespace(kube().kubeConfig, "example");
    try {
      const out = ok(await kubectl(cli("apply", "--dry-run=server", "-n", namespace, "-f", "deploy/examples/apikey.yaml")));
      expect(out).toMatch(/apikey\.keyplane\.dev\/billing created \(server dry run\)/);
      expect(out).toMatch(/deployment\.apps\/billing created \(server dry run\)/);
    } finally {
      await deleteTestNamespace(kube().kubeConfig, namespace);
    }
  });

  it("has the upgrade's one command, as README.md and docs/operator.md give it, annotate every namespace", async () => {
    const command = "kubectl annotate namespace --all keyplane.dev/customers='*'";
    for (const doc of ["README.md", "docs/operator.md"]) expect(await readFile(`${repo}${doc}`, "utf8"), doc).toContain(command);
    const namespaces = ok(await kubectl(cli("get", "namespaces", "-o", "name"))).trim().split("\n");
    const out = ok(await kubectl(cli("annotate", "namespace", "--all", "keyplane.dev/customers=*", "--dry-run=server")));
    expect(out.trim().split("\n").sort()).toEqual(namespaces.map((n) => `${n} annotated (server dry run)`).sort());
  });

  it.skipIf(kubeTarget().kind !== "envtest")("grants the operator's ServiceAccount every call the operator makes", async () => {
    const rbac = await readFile(`${repo}deploy/rbac.yaml`, "utf8");
    const sa = await readFile(`${repo}deploy/serviceaccount.yaml`, "utf8");
    ok(await kubectl(cli("apply", "-n", SYSTEM_NAMESPACE, "-f", "-"), `${sa}\n---\n${rbac}`));
    const as = `system:serviceaccount:${SYSTEM_NAMESPACE}:keyplane`;
    const can = async (verb: string, resource: string, namespace = "team-a") =>
      (await kubectl(cli("auth", "can-i", "--as", as, "-n", namespace, verb, resource))).stdout.trim();
    const calls: Array<[string, string, string?]> = [
      ["list", "apikeys.keyplane.dev"], ["watch", "apikeys.keyplane.dev"], ["get", "apikeys.keyplane.dev"],
      ["patch", "apikeys.keyplane.dev"], ["patch", "apikeys.keyplane.dev/status"],
      ["list", "secrets"], ["watch", "secrets"], ["get", "secrets"], ["create", "secrets"], ["update", "secrets"], ["delete", "secrets"],
      ["create", "events"],
      ["get", "namespaces"], ["list", "namespaces"], ["watch", "namespaces"],
      ...["deployments", "statefulsets", "daemonsets"].flatMap((kind) => ["list", "watch", "get", "patch"].map((verb): [string, string] => [verb, `${kind}.apps`])),
      ["get", "leases.coordination.k8s.io", SYSTEM_NAMESPACE], ["create", "leases.coordination.k8s.io", SYSTEM_NAMESPACE],
      ["update", "leases.coordination.k8s.io", SYSTEM_NAMESPACE],
    ];
    for (const [verb, resource, namespace] of calls) expect(`${verb} ${resource}: ${await can(verb, resource, namespace)}`).toBe(`${verb} ${resource}: yes`);
    // The spec is never written, Leases only in keyplane's own namespace, and workloads only patched.
    expect(await can("update", "leases.coordination.k8s.io", "team-a")).toBe("no");
    expect(await can("delete", "apikeys.keyplane.dev")).toBe("no");
    for (const verb of ["create", "update", "delete"]) expect(`${verb}: ${await can(verb, "deployments.apps")}`).toBe(`${verb}: no`);
    // A Namespace's keyplane.dev/customers binds its ApiKeys: the operator reads it and may never set it.
    for (const verb of ["patch", "update"]) expect(`${verb} namespaces: ${await can(verb, "namespaces")}`).toBe(`${verb} namespaces: no`);
  });
});
