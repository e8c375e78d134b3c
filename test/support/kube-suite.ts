// How Kubernetes suites find a cluster: a control plane of their own (envtest.ts), from
// KEYPLANE_ENVTEST_ASSETS or from the folder test/support/envtest-assets.sh builds (built on first use
// where the tests run as root), or an existing cluster from KEYPLANE_E2E_KUBECONFIG. Skipped with the
// reason when there is none, except under CI.
import { existsSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, it } from "vitest";
import { assetsScript, buildEnvtestAssets, defaultCrdDir, envtestAssets, missingBinaries, startControlPlane, type ControlPlaneOptions, type TestCluster } from "./envtest.ts";
import { installCrds } from "./kube.ts";

/** Where Kubernetes suites run, decided from the environment. `build`: the assets are built first. */
export type KubeTarget =
  | { kind: "existing"; kubeconfigPath: string }
  | { kind: "envtest"; assets: string; build: boolean }
  | { kind: "unavailable"; reason: string; fail: boolean };

/**
 * KEYPLANE_E2E_KUBECONFIG wins (an existing cluster); else KEYPLANE_ENVTEST_ASSETS, else the built
 * folder of envtest-assets.sh, else that folder built on first use, where the tests run as root (it
 * takes apt-get). Otherwise suites are skipped, but fail under CI=true. A variable that is set but
 * points at nothing usable always fails: someone asked for a cluster and would not notice a skip.
 */
export function kubeTarget(env: NodeJS.ProcessEnv = process.env, root = process.getuid?.() === 0): KubeTarget {
  const kubeconfigPath = env.KEYPLANE_E2E_KUBECONFIG;
  if (kubeconfigPath) {
    if (existsSync(kubeconfigPath)) return { kind: "existing", kubeconfigPath };
    return { kind: "unavailable", reason: `KEYPLANE_E2E_KUBECONFIG=${kubeconfigPath}: no such file`, fail: true };
  }
  const assets = envtestAssets(env);
  const missing = missingBinaries(assets);
  if (missing.length === 0) return { kind: "envtest", assets, build: false };
  if (env.KEYPLANE_ENVTEST_ASSETS) {
    return { kind: "unavailable", fail: true, reason: `KEYPLANE_ENVTEST_ASSETS=${assets} lacks ${missing.join(", ")}: run ${assetsScript}` };
  }
  if (root) return { kind: "envtest", assets, build: true };
  return {
    kind: "unavailable",
    fail: env.CI === "true",
    reason: `the test control plane is not built and building it needs root: run ${assetsScript} once as root ` +
      "(or set KEYPLANE_ENVTEST_ASSETS=<a folder of etcd, kube-apiserver, kube-controller-manager>, or KEYPLANE_E2E_KUBECONFIG=<kubeconfig of a cluster>)",
  };
}

/**
 * `describe` for suites that need a Kubernetes API: skipped, with the reason printed, when there is
 * none; failing instead when CI=true or a variable points at nothing.
 */
export function describeKube(name: string, body: () => void): void {
  const target = kubeTarget();
  if (target.kind !== "unavailable") {
    describe(name, body);
  } else if (target.fail) {
    describe(name, () => {
      it("has a Kubernetes API to test against", () => {
        throw new Error(target.reason);
      });
    });
  } else {
    console.warn(`skipping "${name}": ${target.reason}`);
    describe.skip(`${name} (skipped: ${target.reason})`, body);
  }
}

/**
 * The cluster kubeTarget() names: for "envtest" a new control plane, for "existing" the cluster of
 * KEYPLANE_E2E_KUBECONFIG with the CRDs of `crdDir` created or replaced. Throws when there is none.
 */
export async function connectKube(opts: ControlPlaneOptions = {}): Promise<TestCluster> {
  const target = kubeTarget();
  if (target.kind === "unavailable") throw new Error(target.reason);
  if (target.kind === "envtest") {
    if (target.build) await buildEnvtestAssets();
    return startControlPlane(opts);
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(target.kubeconfigPath);
  await installCrds(kubeConfig, opts.crdDir ?? defaultCrdDir);
  return {
    kubeconfigPath: target.kubeconfigPath,
    kubeConfig,
    server: kubeConfig.getCurrentCluster()?.server ?? "",
    token: kubeConfig.getCurrentUser()?.token,
    existing: true,
    stop: async () => {},
  };
}

/**
 * Registers beforeAll/afterAll hooks in the enclosing describe that connect to the cluster (see
 * connectKube) and stop it, and returns a getter for it, valid inside tests.
 */
export function useKube(opts: ControlPlaneOptions = {}): () => TestCluster {
  let cluster: TestCluster | undefined;
  // A first build of the control plane's binaries takes minutes; later starts, seconds.
  const target = kubeTarget();
  beforeAll(async () => {
    cluster = await connectKube(opts);
  }, target.kind === "envtest" && target.build ? 30 * 60_000 : 60_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 30_000);
  return () => {
    if (!cluster) throw new Error("the Kubernetes cluster is not up: did beforeAll fail?");
    return cluster;
  };
}
