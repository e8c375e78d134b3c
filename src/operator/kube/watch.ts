// One watch stream, as a promise of how it ended: closed (by the server, a timeout or us), expired
// (410 Gone: the resourceVersion is too old, relist), or failed.
import { Watch, type KubeConfig } from "@kubernetes/client-node";
import { apiStatusCode } from "./kube-api.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export type WatchEnd = { kind: "closed" } | { kind: "expired" } | { kind: "failed"; error: unknown };

export type WatchQuery = Record<string, string | number | boolean | undefined>;

interface StatusObject {
  code?: number;
  reason?: string;
  message?: string;
}

/** Watches `path` from `query.resourceVersion` until the stream ends or `signal` aborts. */
export function watchOnce<T>(
  kubeConfig: KubeConfig,
  path: string,
  query: WatchQuery,
  onEvent: (event: WatchEvent<T>) => void,
  signal: AbortSignal,
): Promise<WatchEnd> {
  return new Promise((resolve) => {
    let settled = false;
    let inStream: WatchEnd | undefined;
    let controller: AbortController | undefined;
    const finish = (end: WatchEnd) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", abort);
      controller?.abort();
      resolve(end);
    };
    const abort = () => finish({ kind: "closed" });
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });

    const onLine = (type: string, object: unknown) => {
      if (settled) return;
      if (type === "ERROR") {
        // The server sends a Status, then closes the stream: remember why it is about to end.
        const status = object as StatusObject | undefined;
        inStream = status?.code === 410
          ? { kind: "expired" }
          : { kind: "failed", error: new Error(`watch ${path}: ${status?.code ?? "?"} ${status?.reason ?? ""} ${status?.message ?? ""}`.trim()) };
        return;
      }
      if (type === "ADDED" || type === "MODIFIED" || type === "DELETED" || type === "BOOKMARK") onEvent({ type, object: object as T });
    };
    const onDone = (error: unknown) => {
      if (inStream) return finish(inStream);
      if (error === null || error === undefined || signal.aborted) return finish({ kind: "closed" });
      if (apiStatusCode(error) === 410) return finish({ kind: "expired" });
      // client-node ends a stream that has been silent for a while: nothing is lost, watch again.
      if ((error as { name?: unknown }).name === "TimeoutError") return finish({ kind: "closed" });
      finish({ kind: "failed", error });
    };
    new Watch(kubeConfig).watch(path, query, onLine, onDone).then(
      (c) => {
        controller = c;
        if (settled) c.abort();
      },
      (error: unknown) => finish({ kind: "failed", error }),
    );
  });
}
