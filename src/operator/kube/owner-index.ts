// The Secrets of keyplane's cache by the uid of each object that owns them, so that an ApiKey finds its
// own without scanning its namespace: with every ApiKey in one namespace, that scan made each
// reconcile as slow as there are Secrets (docs/operator.md, "Scale").
import type { V1Secret } from "@kubernetes/client-node";
import type { ChangeType } from "./informer.ts";
import { formatRef, refOf } from "../resource/object-ref.ts";

export class OwnerIndex {
  /** owner uid -> "namespace/name" -> Secret */
  readonly #byOwner = new Map<string, Map<string, V1Secret>>();
  /** "namespace/name" -> the owner uids it was indexed under */
  readonly #owners = new Map<string, string[]>();

  /** Keeps the index in step with the informer: call it with each change the informer reports. */
  update(type: ChangeType, secret: V1Secret): void {
    const key = formatRef(refOf(secret));
    for (const uid of this.#owners.get(key) ?? []) {
      const owned = this.#byOwner.get(uid);
      owned?.delete(key);
      if (owned?.size === 0) this.#byOwner.delete(uid);
    }
    this.#owners.delete(key);
    if (type === "deleted") return;
    const uids = [...new Set((secret.metadata?.ownerReferences ?? []).map((ref) => ref.uid))];
    for (const uid of uids) {
      let owned = this.#byOwner.get(uid);
      if (!owned) this.#byOwner.set(uid, (owned = new Map()));
      owned.set(key, secret);
    }
    if (uids.length > 0) this.#owners.set(key, uids);
  }

  /** The Secrets of `namespace` that the object of this uid owns. */
  owned(namespace: string, uid: string | undefined): V1Secret[] {
    if (uid === undefined) return [];
    return [...(this.#byOwner.get(uid)?.values() ?? [])].filter((secret) => secret.metadata?.namespace === namespace);
  }
}
