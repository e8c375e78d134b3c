import type { Logger } from "pino";
import type { OperatorConfig } from "../config.ts";
import type { RunningOperator } from "./start.ts";
import type { KeyStoreNeeds } from "./reconcile/keystore.ts";

/**
 * Starts the ApiKey operator as KEYPLANE_OPERATOR says: `off`, nothing; `on`, it must reach a cluster
 * that serves ApiKeys, or this throws; `auto`, it starts where one is configured and answers, and
 * otherwise logs why not and returns undefined. The operator, and the Kubernetes client with it, is
 * loaded only where a cluster is configured: a keyplane outside Kubernetes is spared a third of a
 * second of start-up and some 25 MB of memory.
 */
export async function startOperator(config: OperatorConfig, ctx: KeyStoreNeeds, log: Logger): Promise<RunningOperator | undefined> {
  const { mode, cluster } = config;
  if (mode === "off") return undefined;
  if (!cluster) {
    const why = "no Kubernetes cluster configured (no KUBECONFIG, ~/.kube/config nor in-cluster service account)";
    if (mode === "on") throw new Error(`KEYPLANE_OPERATOR=on but ${why}`);
    log.info({ mode }, `operator off: ${why}`);
    return undefined;
  }
  const { startOnCluster } = await import("./start.ts");
  return startOnCluster(config, cluster, ctx, log);
}
