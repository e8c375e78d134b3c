import { readFile } from "node:fs/promises";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { resolveSpec, type ApiKey } from "../../src/operator/resource/apikey.ts";

// deploy/examples/envoy-gateway.yaml (docs/gateways.md, "Envoy Gateway"): its ApiKey is valid as the
// operator reads it, and its SecurityPolicy reads the Secret that ApiKey writes, in the envoy-gateway
// form. (test/e2e/deploy.test.ts dry-runs the other example; the SecurityPolicy's CRD is Envoy
// Gateway's, which the test control plane does not serve.)
const docs = loadAll(await readFile(new URL("../../deploy/examples/envoy-gateway.yaml", import.meta.url), "utf8")) as Array<{ kind: string }>;

interface SecurityPolicy {
  spec: { apiKeyAuth: { credentialRefs: Array<{ group: string; kind: string; name: string }>; extractFrom: Array<{ headers: string[] }>; forwardClientIDHeader?: string } };
}

describe("deploy/examples/envoy-gateway.yaml", () => {
  const apiKey = docs.find((d) => d.kind === "ApiKey") as unknown as ApiKey;
  const policy = docs.find((d) => d.kind === "SecurityPolicy") as unknown as SecurityPolicy;

  it("has an ApiKey the operator takes, writing its Secret for Envoy Gateway", () => {
    const spec = resolveSpec(apiKey);
    expect(spec.ok ? "" : spec.message).toBe("");
    expect(spec.ok && spec.spec.secret).toMatchObject({ name: "billing-gateway-keys", format: "envoy-gateway" });
  });

  it("has a SecurityPolicy whose apiKeyAuth reads that Secret", () => {
    const spec = resolveSpec(apiKey);
    expect(policy.spec.apiKeyAuth.credentialRefs).toEqual([{ group: "", kind: "Secret", name: spec.ok ? spec.spec.secret.name : "?" }]);
    expect(policy.spec.apiKeyAuth.extractFrom).toEqual([{ headers: ["x-api-key"] }]);
  });
});
