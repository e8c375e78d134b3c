// Which customers the ApiKeys of a namespace may name: the Namespace's annotation keyplane.dev/customers
// (docs/operator.md, "Namespaces and customers"). Setting a Namespace's annotations takes cluster-level
// rights that a namespace's own editors lack, so the right to create ApiKeys in a namespace is not the
// right to every customer's keys. Pure: gather reads the annotation and the customers, plan decides.
import { parseNamed } from "../../domain/scope/identifier.ts";

export const CUSTOMERS_ANNOTATION = "keyplane.dev/customers";

/** The one entry that lets a namespace name every customer. */
const EVERY = "*";

/** What a namespace's ApiKeys may name. */
export type NamespaceBinding =
  /** KEYPLANE_NAMESPACE_BINDING=off: any customer, from any namespace (a cluster one team runs). */
  | { kind: "lifted" }
  | { kind: "every"; namespace: string }
  /** The customers the annotation lists as written (names, ids or uuids); none when it is absent. */
  | { kind: "listed"; namespace: string; listed: string[] };

/** A customer as keyplane's directory knows it: each form an annotation or a spec may name it by. */
export interface CustomerNames {
  id: number;
  uuid: string;
  name: string;
}

/** The binding of a namespace from its annotations: comma-separated entries, whitespace trimmed, `*` for all. */
export function namespaceBinding(namespace: string, annotations: Readonly<Record<string, string>> | undefined): NamespaceBinding {
  const listed = (annotations?.[CUSTOMERS_ANNOTATION] ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
  return listed.includes(EVERY) ? { kind: "every", namespace } : { kind: "listed", namespace, listed };
}

/** Whether `ref`, as a spec or an annotation writes it (id, uuid or name, names without letter case), names `customer`. */
export function namesCustomer(ref: string, customer: CustomerNames): boolean {
  const named = parseNamed(ref);
  switch (named.kind) {
    case "id": return named.id === customer.id;
    case "uuid": return named.uuid === customer.uuid.toLowerCase();
    case "name": return named.name.toLowerCase() === customer.name.toLowerCase();
  }
}

/** A reference as the directory reads it: an id, a uuid, or a name without letter case. */
function refKey(ref: string): string {
  const named = parseNamed(ref);
  return named.kind === "id" ? `id:${named.id}` : named.kind === "uuid" ? `uuid:${named.uuid}` : `name:${named.name.toLowerCase()}`;
}

/**
 * Whether an ApiKey of the namespace may name the customer `ref`, looked for among `customers`. A
 * customer the directory does not know is allowed only when the annotation names it the same way, so
 * that the answer tells nothing of which customers exist.
 */
export function allowsCustomer(binding: NamespaceBinding, ref: string, customers: readonly CustomerNames[]): boolean {
  if (binding.kind !== "listed") return true;
  const customer = customers.find((c) => namesCustomer(ref, c));
  return binding.listed.some((entry) => (customer ? namesCustomer(entry, customer) : refKey(entry) === refKey(ref)));
}

/** Whether the operator may change or delete a key of the customer of this id (one of `customers`). */
export function allowsKeysOf(binding: NamespaceBinding, customerId: number, customers: readonly CustomerNames[]): boolean {
  if (binding.kind !== "listed") return true;
  const customer = customers.find((c) => c.id === customerId);
  return customer !== undefined && binding.listed.some((entry) => namesCustomer(entry, customer));
}

/** Ready's message for a customer the namespace does not list: what to annotate, and who can. */
export function notAllowedMessage(binding: Extract<NamespaceBinding, { kind: "listed" }>, ref: string): string {
  const { namespace, listed } = binding;
  const why = listed.length === 0
    ? `namespace ${namespace} has no annotation ${CUSTOMERS_ANNOTATION}`
    : `the annotation ${CUSTOMERS_ANNOTATION} of namespace ${namespace} ("${listed.join(",")}") does not list it`;
  const overwrite = listed.length === 0 ? "" : " --overwrite";
  return `this ApiKey may not name customer "${ref}": ${why}. A cluster administrator allows it with: ` +
    `kubectl annotate namespace ${namespace}${overwrite} ${CUSTOMERS_ANNOTATION}='${[...listed, ref].join(",")}'`;
}
