import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
// js-yaml parses the committed file as kubectl would, without the client's model in between.
import { load } from "js-yaml";
import { CRD_FILES } from "../../cli/crd.ts";
import { scopeRules } from "./apikey.ts";
import { GO_DURATION_PATTERN } from "./duration.ts";
import { buildCrd, crdYaml, toStructural } from "./crd.ts";
import type { SchemaNode } from "./crd.ts";

const crd = buildCrd();
const [version] = crd.spec.versions;
if (!version) throw new Error("the CRD has no version");
const root = version.schema.openAPIV3Schema;
const properties = (node: unknown) => (node as { properties: Record<string, SchemaNode> }).properties;
const spec = properties(root).spec;

/** Every schema node below node, with its path. */
function* nodes(node: SchemaNode, path = "$"): Generator<[string, SchemaNode]> {
  yield [path, node];
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, SchemaNode>)) {
    yield* nodes(child, `${path}.${name}`);
  }
  if (node.items) yield* nodes(node.items as SchemaNode, `${path}[*]`);
  if (typeof node.additionalProperties === "object") yield* nodes(node.additionalProperties as SchemaNode, `${path}.*`);
}

describe("the committed CRD", () => {
  for (const file of CRD_FILES) {
    const name = file.pathname.split("/").slice(-2).join("/");
    it(`${name} is the generated CRD (run npm run crd after changing the schema)`, async () => {
      expect(await readFile(file, "utf8")).toBe(crdYaml());
    });
  }

  it("reads back as exactly the built object: the YAML rendering loses nothing", () => {
    expect(load(crdYaml())).toEqual(crd);
  });
});

describe("the CRD", () => {
  it("names the resource as the contract does", () => {
    expect(crd.metadata.name).toBe("apikeys.keyplane.dev");
    expect(crd.spec.group).toBe("keyplane.dev");
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names).toMatchObject({ kind: "ApiKey", plural: "apikeys", shortNames: ["ak"] });
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([["v1alpha1", true, true]]);
  });

  it("has the status subresource", () => {
    expect(version.subresources).toEqual({ status: {} });
  });

  it("has the printer columns of the contract", () => {
    expect(version.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath])).toEqual([
      ["Customer", "string", ".spec.customer"],
      ["Domain", "string", ".spec.domain"],
      ["Key", "string", ".status.key.hint"],
      ["Active", "boolean", ".spec.active"],
      ["Ready", "string", '.status.conditions[?(@.type=="Ready")].status'],
      ["Secret", "string", ".status.secretName"],
      ["Next rotation", "string", ".status.rotation.nextRotationTime"],
      ["Age", "date", ".metadata.creationTimestamp"],
    ]);
  });

  it("is structural: every node has one type, and nothing a structural schema refuses", () => {
    for (const [path, node] of nodes(root)) {
      expect(typeof node.type, path).toBe("string");
      for (const key of ["$schema", "$ref", "anyOf", "oneOf", "allOf", "not", "propertyNames"]) {
        expect(node, path).not.toHaveProperty([key]);
      }
      if (node.properties) expect(node, path).not.toHaveProperty(["additionalProperties"]);
    }
  });

  it("keeps the label and annotation maps as maps of strings", () => {
    const secret = properties(spec).secret;
    expect(properties(secret).labels).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
    expect(properties(secret).annotations).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
  });

  it("defaults what the zod schema defaults", () => {
    const fields = properties(spec);
    expect(fields.active?.default).toBe(true);
    expect(fields.deletionPolicy?.default).toBe("Delete");
    // The absent secret object defaults to {}, so that the server then fills its key.
    expect(fields.secret?.default).toEqual({});
    expect(properties(fields.secret).key?.default).toBe("apiKey");
    expect(spec?.required).toEqual(["customer"]);
  });

  it("carries the scope rules of the zod schema as CEL rules", () => {
    expect(spec?.["x-kubernetes-validations"]).toEqual(scopeRules.map((r) => ({ rule: r.cel, message: r.message })));
    expect(root["x-kubernetes-validations"]).toEqual([expect.objectContaining({ rule: expect.stringContaining("self.metadata.name") })]);
  });

  it("types the status, with conditions as a map list keyed by type", () => {
    const status = properties(root).status;
    expect(Object.keys(properties(status))).toEqual(["observedGeneration", "conditions", "key", "secretName", "rotation"]);
    expect(properties(status).conditions).toMatchObject({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] });
    expect(properties(properties(status).key).id).toMatchObject({ type: "integer", format: "int64" });
    expect(Object.keys(properties(properties(status).rotation))).toEqual(["lastRotationTime", "nextRotationTime", "lastRequest", "previousKey"]);
  });

  it("types spec.rotation: Go durations by pattern, with the defaults", () => {
    const rotation = properties(properties(root).spec).rotation;
    expect(rotation).toMatchObject({ required: ["every"] });
    expect(properties(rotation).every).toMatchObject({ type: "string", pattern: GO_DURATION_PATTERN });
    expect(properties(rotation).gracePeriod).toMatchObject({ type: "string", pattern: GO_DURATION_PATTERN, default: "1h" });
    expect(properties(rotation).restartWorkloads).toMatchObject({ type: "boolean", default: false });
  });
});

describe("spec.policy and spec.secret.format in the CRD", () => {
  const policy = properties(spec).policy;
  const at = (node: SchemaNode | undefined, ...path: string[]) => path.reduce<SchemaNode | undefined>((n, p) => (p === "[*]" ? (n?.items as SchemaNode) : properties(n)[p]), node);

  it("types the policy with the contract's bounds, so the API server refuses what they can say", () => {
    expect(Object.keys(properties(policy))).toEqual(["restrictions", "ratelimits", "credits", "leakPolicy"]);
    expect(at(policy, "restrictions", "ips")).toMatchObject({ type: "array", minItems: 1, maxItems: 100 });
    expect(at(policy, "restrictions", "methods", "[*]")).toMatchObject({ type: "string", pattern: "^[A-Z][A-Z0-9_-]{0,31}$" });
    expect(at(policy, "ratelimits")).toMatchObject({ type: "array", maxItems: 10 });
    expect(at(policy, "ratelimits", "[*]", "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 1_000_000_000 });
    expect(at(policy, "ratelimits", "[*]", "windowSeconds")).toMatchObject({ minimum: 1, maximum: 2_592_000 });
    expect(at(policy, "credits", "remaining")).toMatchObject({ type: "integer", format: "int64", minimum: 0, maximum: 1e12 });
    expect(at(policy, "credits", "refill", "interval")).toMatchObject({ enum: ["daily", "monthly"] });
    expect(at(policy, "leakPolicy")).toMatchObject({ enum: ["disable", "rotate", "notify"] });
  });

  it("keys the rate limits by name, so that two of one name are refused", () => {
    expect(at(policy, "ratelimits")).toMatchObject({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] });
    expect(at(policy, "ratelimits", "[*]")).toMatchObject({ required: ["name", "limit", "windowSeconds"] });
  });

  it("offers the two Secret formats, keyplane by default", () => {
    expect(at(spec, "secret", "format")).toMatchObject({ type: "string", enum: ["keyplane", "envoy-gateway"], default: "keyplane" });
  });
});

describe("toStructural", () => {
  it("drops zod's noise", () => {
    const node = {
      $schema: "x",
      type: "object",
      additionalProperties: false,
      properties: { n: { type: "integer", minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } },
    };
    expect(toStructural(node)).toEqual({ type: "object", properties: { n: { type: "integer" } } });
  });

  it("refuses a node without a single type", () => {
    expect(() => toStructural({ type: "object", properties: { a: { anyOf: [{ type: "string" }] } } })).toThrow("$.a");
  });
});
