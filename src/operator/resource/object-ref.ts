// "namespace/name": how the operator names an object in its work queue, its logs and events, and in
// a key's managed_by (the ApiKey that manages it). This module alone builds and reads that form.
export interface ObjectRef {
  namespace: string;
  name: string;
}

export function refOf(object: { metadata?: { namespace?: string | undefined; name?: string | undefined } | undefined }): ObjectRef {
  return { namespace: object.metadata?.namespace ?? "", name: object.metadata?.name ?? "" };
}

export function formatRef(ref: ObjectRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** The reference a "namespace/name" text names; undefined for anything else. */
export function parseRef(text: unknown): ObjectRef | undefined {
  if (typeof text !== "string") return undefined;
  const slash = text.indexOf("/");
  if (slash <= 0 || slash === text.length - 1) return undefined;
  return { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}
