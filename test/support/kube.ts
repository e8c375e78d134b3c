// Small helpers for tests that talk to a Kubernetes API: polling, throwaway namespaces, error codes.
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ApiException, ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, loadAllYaml } from "@kubernetes/client-node";
import type { KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Names what was awaited, for the timeout error. */
  what?: string;
}

/**
 * Calls `check` until it returns something other than undefined, null or false, and returns that.
 * A throw counts as "not yet"; on timeout the last throw is the error's cause.
 */
export async function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 10_000, intervalMs = 100, what = "condition" }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
    }
    await sleep(intervalMs);
  }
}

/** The HTTP status of a failed client-node call, or undefined when the error did not come from the API. */
export function apiStatusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/** The Kubernetes Status object a failed client-node call carried, when it carried one. */
export function apiStatus(err: unknown): { reason?: string; message?: string; code?: number } | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = typeof err.body === "string" ? parseJson(err.body) : err.body;
  return body && typeof body === "object" ? (body as { reason?: string; message?: string; code?: number }) : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A DNS-1123 name unique enough for objects that tests create side by side. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** Creates a namespace with a unique name, and the annotations given, and returns the name. */
export async function createTestNamespace(kubeConfig: KubeConfig, prefix = "test", annotations: Record<string, string> = {}): Promise<string> {
  const name = uniqueName(prefix);
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({
    body: { metadata: { name, labels: { "keyplane.dev/test": "true" }, annotations } },
  });
  return name;
}

/**
 * Deletes a namespace without waiting. Without kube-controller-manager it stays Terminating, which
 * harms nothing on a throwaway control plane.
 */
export async function deleteTestNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  try {
    await kubeConfig.makeApiClient(CoreV1Api).deleteNamespace({ name });
  } catch (err) {
    if (apiStatusCode(err) !== 404) throw err;
  }
}

/** The CustomResourceDefinitions in every .yaml/.yml file of `dir`; none when it is missing or empty. */
export async function readCrds(dir: string): Promise<V1CustomResourceDefinition[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const crds: V1CustomResourceDefinition[] = [];
  for (const file of files) {
    const docs = loadAllYaml(await readFile(join(dir, file), "utf8")) as Array<{ kind?: string } | null>;
    for (const doc of docs) if (doc?.kind === "CustomResourceDefinition") crds.push(doc as V1CustomResourceDefinition);
  }
  return crds;
}

/**
 * Creates (or replaces) the CRDs of `dir` through the API and waits until each is Established and its
 * resource answers a list, so a test can create custom objects at once. Returns the CRDs' names.
 * Through the API rather than kubectl: kubectl's client-side validation against a v1.20 server
 * rejects x-kubernetes-validations, which the server itself silently drops.
 */
export async function installCrds(kubeConfig: KubeConfig, dir: string, timeoutMs = 20_000): Promise<string[]> {
  const crds = await readCrds(dir);
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? "";
    try {
      await api.createCustomResourceDefinition({ body: crd });
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw err;
      const current = await api.readCustomResourceDefinition({ name });
      const body = { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion } };
      await api.replaceCustomResourceDefinition({ name, body });
    }
  }
  await Promise.all(crds.map(async (crd) => {
    const name = crd.metadata?.name ?? "";
    await waitFor(async () => {
      const current = await api.readCustomResourceDefinition({ name });
      return current.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    }, { timeoutMs, what: `CRD ${name} to be Established` });
    const version = crd.spec.versions.find((v) => v.served)?.name ?? "";
    await waitFor(async () => {
      await objects.listClusterCustomObject({ group: crd.spec.group, version, plural: crd.spec.names.plural, limit: 1 });
      return true;
    }, { timeoutMs, what: `${crd.spec.names.plural}.${crd.spec.group}/${version} to be served` });
  }));
  return crds.map((crd) => crd.metadata?.name ?? "");
}
