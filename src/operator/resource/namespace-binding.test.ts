import { describe, expect, it } from "vitest";
import { allowsCustomer, allowsKeysOf, CUSTOMERS_ANNOTATION, namespaceBinding, namesCustomer, notAllowedMessage, type CustomerNames, type NamespaceBinding } from "./namespace-binding.ts";

const ACME: CustomerNames = { id: 7, uuid: "0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10", name: "Acme" };
const GLOBEX: CustomerNames = { id: 8, uuid: "5e2d8a41-0c7b-4f69-b3a2-91d4e6f8c725", name: "globex" };

const annotated = (value: string | undefined) => namespaceBinding("team-a", value === undefined ? undefined : { [CUSTOMERS_ANNOTATION]: value, other: "x" });
const listed = (...entries: string[]): NamespaceBinding => ({ kind: "listed", namespace: "team-a", listed: entries });

describe("namespaceBinding: the annotation keyplane.dev/customers", () => {
  it.each([
    ["absent", undefined, listed()],
    ["empty", "", listed()],
    ["only commas and blanks", " , ,", listed()],
    ["one name", "acme", listed("acme")],
    ["names, ids and uuids, comma-separated, whitespace trimmed", " acme ,7,\t0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10 ", listed("acme", "7", "0b6f3c1e-9a52-4c3e-8f1d-2a7b5e9c4d10")],
    ["`*`", "*", { kind: "every", namespace: "team-a" }],
    ["`*` among names", "acme, *", { kind: "every", namespace: "team-a" }],
  ])("reads one %s", (_name, value, binding) => {
    expect(annotated(value)).toEqual(binding);
  });

  it("is not fooled by a `*` inside a name, nor by another annotation", () => {
    expect(annotated("acme*")).toEqual(listed("acme*"));
    expect(namespaceBinding("team-a", { "keyplane.dev/customer": "*", "example.com/customers": "*" })).toEqual(listed());
  });
});

describe("namesCustomer", () => {
  it.each([
    ["its name", "Acme", true],
    ["its name in another letter case", "ACME", true],
    ["its id", "7", true],
    ["its uuid", ACME.uuid, true],
    ["its uuid in upper case", ACME.uuid.toUpperCase(), true],
    ["another's name", "globex", false],
    ["another's id", "8", false],
    ["another's uuid", GLOBEX.uuid, false],
    ["a name that contains its name", "acme-corp", false],
  ])("%s: %s", (_name, ref, expected) => {
    expect(namesCustomer(ref, ACME)).toBe(expected);
  });
});

describe("allowsCustomer", () => {
  const both = [ACME, GLOBEX];
  it.each<[string, NamespaceBinding, string, CustomerNames[], boolean]>([
    ["the rule lifted: any customer", { kind: "lifted" }, "globex", both, true],
    ["`*`: any customer", { kind: "every", namespace: "team-a" }, "globex", both, true],
    ["no annotation: none", listed(), "acme", both, false],
    ["the customer listed by the name the spec uses", listed("acme"), "acme", both, true],
    ["listed by id, named by name", listed("7"), "acme", both, true],
    ["listed by uuid, named by id", listed(ACME.uuid), "7", both, true],
    ["listed by name, named by uuid", listed("acme"), ACME.uuid, both, true],
    ["another customer than the one listed", listed("acme"), "globex", both, false],
    ["another customer by id", listed("acme"), "8", both, false],
    ["one of several listed", listed("initech", "globex"), "globex", both, true],
    ["an unknown customer named as the annotation lists it (it may be created later)", listed("initech"), "INITECH", both, true],
    ["an unknown customer by id, the annotation listing a name", listed("acme"), "99", both, false],
    ["an unknown customer not listed: the same answer as a known one", listed("acme"), "initech", both, false],
  ])("%s", (_name, binding, ref, customers, expected) => {
    expect(allowsCustomer(binding, ref, customers)).toBe(expected);
  });
});

describe("allowsKeysOf", () => {
  it("lets the operator change the keys of a listed customer only", () => {
    expect(allowsKeysOf(listed("acme"), 7, [ACME, GLOBEX])).toBe(true);
    expect(allowsKeysOf(listed("acme"), 8, [ACME, GLOBEX])).toBe(false);
    expect(allowsKeysOf(listed("8"), 8, [ACME, GLOBEX])).toBe(true);
  });

  it("refuses the keys of a customer it cannot find (deleted) unless every customer is allowed", () => {
    expect(allowsKeysOf(listed("acme"), 9, [ACME])).toBe(false);
    expect(allowsKeysOf({ kind: "every", namespace: "team-a" }, 9, [])).toBe(true);
    expect(allowsKeysOf({ kind: "lifted" }, 9, [])).toBe(true);
  });
});

describe("notAllowedMessage", () => {
  it("says what to annotate on a namespace without the annotation", () => {
    expect(notAllowedMessage({ kind: "listed", namespace: "team-a", listed: [] }, "acme")).toBe(
      'this ApiKey may not name customer "acme": namespace team-a has no annotation keyplane.dev/customers. ' +
        "A cluster administrator allows it with: kubectl annotate namespace team-a keyplane.dev/customers='acme'",
    );
  });

  it("keeps what the annotation lists when it names others", () => {
    expect(notAllowedMessage({ kind: "listed", namespace: "team-a", listed: ["globex", "8"] }, "acme")).toBe(
      'this ApiKey may not name customer "acme": the annotation keyplane.dev/customers of namespace team-a ("globex,8") does not list it. ' +
        "A cluster administrator allows it with: kubectl annotate namespace team-a --overwrite keyplane.dev/customers='globex,8,acme'",
    );
  });
});
