// kube/ of operator/: the Kubernetes machinery: informers and watches, the API client and its connections,
// the work queue, leader election, the owner index. It may use resource/ and services/operations/.
//
// List-and-watch of one kind of object into a cache, after client-go's reflector: list, then watch from
// the list's resourceVersion (kept fresh by bookmarks); a dropped watch resumes where it was, after a
// backoff when it failed; 410 Gone relists, and the difference comes out as events.
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig, V1ObjectMeta } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { formatRef, refOf } from "../resource/object-ref.ts";
import { backoffDelay, type BackoffOptions } from "./queue.ts";
import { watchOnce, type WatchEvent } from "./watch.ts";

export interface KubeObject {
  metadata?: V1ObjectMeta;
}

export interface ListPage<T> {
  items: T[];
  metadata?: { resourceVersion?: string; _continue?: string };
}

export type ChangeType = "added" | "updated" | "deleted";

export interface InformerOptions<T extends KubeObject> {
  /** For logs: "apikeys", "secrets". */
  name: string;
  kubeConfig: KubeConfig;
  /** The collection's path, as watched: /api/v1/secrets, /api/v1/namespaces/team-a/secrets, ... */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** One page of the same collection. */
  list: (page: { limit: number; _continue?: string; labelSelector?: string; fieldSelector?: string }) => Promise<ListPage<T>>;
  onChange: (type: ChangeType, object: T) => void;
  log: Logger;
  backoff: BackoffOptions;
}

/** Objects asked for per list page. */
const LIST_PAGE_SIZE = 500;
/** A watch shorter than this that ends is treated like a failure, so a flapping stream cannot spin. */
const MIN_HEALTHY_WATCH_MS = 1_000;
/** Consecutive failed watches after which the informer relists rather than resume. */
const RELIST_AFTER_FAILURES = 5;

export class Informer<T extends KubeObject> {
  readonly #o: InformerOptions<T>;
  /** namespace -> name -> object */
  readonly #store = new Map<string, Map<string, T>>();
  readonly #abort = new AbortController();
  #resourceVersion = "";
  #running: Promise<void> | undefined;

  constructor(options: InformerOptions<T>) {
    this.#o = options;
  }

  /** Starts listing and watching; resolves once the cache holds a first full list. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#running = this.#run(resolve).then(
        // Stopped before a first list: whoever waits for it must not wait forever (a no-op once resolved).
        () => reject(new Error(`informer ${this.#o.name} stopped`)),
        (error: unknown) => {
          this.#o.log.error({ err: error, informer: this.#o.name }, "informer stopped");
          reject(error);
        },
      );
    });
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running?.catch(() => undefined);
  }

  get(namespace: string, name: string): T | undefined {
    return this.#store.get(namespace)?.get(name);
  }

  inNamespace(namespace: string): Iterable<T> {
    return this.#store.get(namespace)?.values() ?? [];
  }

  *all(): Iterable<T> {
    for (const byName of this.#store.values()) yield* byName.values();
  }

  get size(): number {
    let n = 0;
    for (const byName of this.#store.values()) n += byName.size;
    return n;
  }

  async #run(synced: () => void): Promise<void> {
    const signal = this.#abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        await this.#relist();
        synced();
        failures = 0;
      } catch (error) {
        failures++;
        this.#o.log.warn({ err: error, informer: this.#o.name, failures }, "list failed; retrying");
        await this.#pause(failures);
        continue;
      }
      while (!signal.aborted) {
        const started = Date.now();
        const end = await watchOnce<T>(this.#o.kubeConfig, this.#o.path, {
          resourceVersion: this.#resourceVersion,
          allowWatchBookmarks: true,
          labelSelector: this.#o.labelSelector,
          fieldSelector: this.#o.fieldSelector,
          // The server ends the stream after 5-10 minutes, spread so that watches do not all renew together.
          timeoutSeconds: 300 + Math.floor(Math.random() * 300),
        }, (event) => this.#apply(event), signal);
        if (signal.aborted) return;
        if (end.kind === "expired") {
          this.#o.log.info({ informer: this.#o.name }, "watch expired (410 Gone): relisting");
          break;
        }
        if (end.kind === "closed" && Date.now() - started >= MIN_HEALTHY_WATCH_MS) {
          failures = 0;
          continue;
        }
        failures++;
        if (end.kind === "failed") this.#o.log.warn({ err: end.error, informer: this.#o.name, failures }, "watch failed; resuming");
        if (failures >= RELIST_AFTER_FAILURES) break;
        await this.#pause(failures);
      }
    }
  }

  async #pause(failures: number): Promise<void> {
    await sleep(backoffDelay(failures, this.#o.backoff), undefined, { signal: this.#abort.signal }).catch(() => undefined);
  }

  async #relist(): Promise<void> {
    const items: T[] = [];
    let resourceVersion = "";
    let next: string | undefined;
    do {
      const page = await this.#o.list({ limit: LIST_PAGE_SIZE, _continue: next, labelSelector: this.#o.labelSelector, fieldSelector: this.#o.fieldSelector });
      items.push(...page.items);
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      next = page.metadata?._continue || undefined;
    } while (next);
    this.#abort.signal.throwIfAborted();

    const previous = new Map<string, T>();
    for (const object of this.all()) previous.set(keyOf(object), object);
    this.#store.clear();
    for (const object of items) {
      const key = keyOf(object);
      const old = previous.get(key);
      previous.delete(key);
      this.#put(object);
      if (!old) this.#o.onChange("added", object);
      else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.#o.onChange("updated", object);
    }
    // What the watch missed being deleted.
    for (const gone of previous.values()) this.#o.onChange("deleted", gone);
    this.#resourceVersion = resourceVersion;
  }

  #apply({ type, object }: WatchEvent<T>): void {
    const resourceVersion = object.metadata?.resourceVersion;
    if (resourceVersion) this.#resourceVersion = resourceVersion;
    if (type === "BOOKMARK") return;
    if (type === "DELETED") {
      const { namespace = "", name = "" } = object.metadata ?? {};
      const byName = this.#store.get(namespace);
      byName?.delete(name);
      if (byName?.size === 0) this.#store.delete(namespace);
      this.#o.onChange("deleted", object);
      return;
    }
    this.#put(object);
    this.#o.onChange(type === "ADDED" ? "added" : "updated", object);
  }

  #put(object: T): void {
    // Field-manager bookkeeping is the biggest part of most objects and of no use here.
    if (object.metadata?.managedFields) delete object.metadata.managedFields;
    const { namespace = "", name = "" } = object.metadata ?? {};
    let byName = this.#store.get(namespace);
    if (!byName) this.#store.set(namespace, (byName = new Map()));
    byName.set(name, object);
  }
}

function keyOf(object: KubeObject): string {
  return formatRef(refOf(object));
}
