// One pool of connections to the API server for every call the operator makes. @kubernetes/client-node
// 2.0 builds a new undici Agent for each request (KubeConfig's private createDispatcher, reached from
// applySecurityAuthentication), so each call opened a TLS connection of its own and left it to idle
// out: at 1,000 ApiKeys the handshakes were most of the operator's CPU, a third of the API server's,
// and some 400 MiB of the operator's memory (docs/operator.md, "Scale").
import { createHash } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";

type MakeDispatcher = (cluster: unknown, agentOptions: object) => unknown;

interface Dispatching {
  createDispatcher?: MakeDispatcher & { shared?: true };
  createDispatcherOptions(cluster: unknown, agentOptions: object): unknown;
}

/**
 * Makes `kubeConfig` hand every request the same dispatcher for the same cluster, CA and credentials
 * (a change of client certificate gets a dispatcher of its own). Returns it, changed in place; one
 * whose client has no such factory is returned as it is.
 */
export function reuseConnections(kubeConfig: KubeConfig): KubeConfig {
  const config = kubeConfig as unknown as Dispatching;
  const make = config.createDispatcher;
  if (typeof make !== "function" || make.shared) return kubeConfig;
  const made = new Map<string, unknown>();
  const shared = (cluster: unknown, agentOptions: object) => {
    const key = digest(config.createDispatcherOptions(cluster, agentOptions));
    if (!made.has(key)) made.set(key, make.call(kubeConfig, cluster, agentOptions));
    return made.get(key);
  };
  config.createDispatcher = Object.assign(shared, { shared: true as const });
  return kubeConfig;
}

/** A digest of dispatcher options: the CA, certificate and key are buffers, hashed as they are (no copies kept). */
function digest(options: unknown): string {
  const hash = createHash("sha256");
  const add = (value: unknown): void => {
    if (value instanceof Uint8Array) hash.update(value);
    else if (typeof value === "object" && value !== null) {
      for (const key of Object.keys(value).sort()) {
        hash.update(`${key}:`);
        add((value as Record<string, unknown>)[key]);
      }
    } else hash.update(`${typeof value}:${String(value)};`);
  };
  add(options);
  return hash.digest("hex");
}
