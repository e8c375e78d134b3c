import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { load, loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { AUTH_GATEWAYS } from "../../src/http/verification/auth-gateway.ts";

// The gateway configurations keyplane ships for Traefik and Envoy (docs/gateways.md), read as the
// gateways read them: each sends keyplane only what it reads, sets the original request itself, and
// runs keyplane in its own KEYPLANE_AUTH_GATEWAY mode. (nginx's runs for real in nginx-gateway.test.ts.)
const DEPLOY = fileURLToPath(new URL("../../deploy/", import.meta.url));
const yaml = async (path: string) => load(await readFile(join(DEPLOY, path), "utf8")) as Record<string, unknown>;

const IDENTITY = ["Key-Id", "Key-Type", "Level", "Customer-Id", "Customer", "Domain-Id", "Domain", "Application-Id", "Subscriber-Id", "User-Id"]
  .map((name) => `x-keyplane-${name.toLowerCase()}`);
/** Headers a client could send to name the original request: none may go from a gateway to keyplane but the gateway's own. */
const ORIGINAL = ["x-original-uri", "x-original-method", "x-forwarded-uri", "x-forwarded-method"];

interface ForwardAuth {
  address: string;
  trustForwardHeader?: boolean;
  authRequestHeaders?: string[];
  authResponseHeaders?: string[];
}

describe("deploy/traefik", () => {
  const checks = (forwardAuth: ForwardAuth) => {
    expect(forwardAuth.address).toMatch(/\/auth$/);
    // Traefik writes X-Forwarded-Method/Uri/For from the request it holds, never a client's copies.
    expect(forwardAuth.trustForwardHeader).toBe(false);
    // Without this list Traefik forwards every client header, X-Original-URI among them.
    expect(forwardAuth.authRequestHeaders?.map((h) => h.toLowerCase()).sort()).toEqual(["authorization", "referer"]);
    expect(forwardAuth.authResponseHeaders?.map((h) => h.toLowerCase()).sort()).toEqual([...IDENTITY].sort());
  };

  it("has a Middleware that sends keyplane only Authorization and Referer, and sets the identity on the request", async () => {
    const middleware = (await yaml("traefik/middleware.yaml")) as { apiVersion: string; kind: string; metadata: { namespace: string }; spec: { forwardAuth: ForwardAuth } };
    expect(middleware).toMatchObject({ apiVersion: "traefik.io/v1alpha1", kind: "Middleware", metadata: { namespace: "keyplane-system" } });
    checks(middleware.spec.forwardAuth);
  });

  it("has the same forwardAuth for Traefik's file provider", async () => {
    const dynamic = (await yaml("traefik/dynamic.yaml")) as { http: { middlewares: Record<string, { forwardAuth: ForwardAuth }>; routers: Record<string, { middlewares: string[] }> } };
    checks(dynamic.http.middlewares.keyplane!.forwardAuth);
    expect(dynamic.http.routers.api!.middlewares).toEqual(["keyplane"]);
  });
});

interface Filter {
  name: string;
  typed_config: Record<string, unknown>;
}

describe("deploy/envoy/envoy.yaml", () => {
  const filters = async () => {
    const envoy = (await yaml("envoy/envoy.yaml")) as {
      static_resources: { listeners: { filter_chains: { filters: { typed_config: { http_filters: Filter[] } }[] }[] }[] };
    };
    return envoy.static_resources.listeners[0]!.filter_chains[0]!.filters[0]!.typed_config.http_filters;
  };

  it("asks keyplane with path_prefix /auth, sending only authorization, referer and x-forwarded-for", async () => {
    const extAuthz = (await filters()).find((f) => f.name === "envoy.filters.http.ext_authz")!.typed_config as {
      failure_mode_allow: boolean;
      http_service: { path_prefix: string; authorization_request: { allowed_headers: { patterns: { exact?: string; prefix?: string }[] } } };
    };
    expect(extAuthz.failure_mode_allow).toBe(false);
    expect(extAuthz.http_service.path_prefix).toBe("/auth");
    const allowed = extAuthz.http_service.authorization_request.allowed_headers.patterns;
    expect(allowed.every((p) => p.exact !== undefined && p.prefix === undefined)).toBe(true);
    expect(allowed.map((p) => p.exact).sort()).toEqual(["authorization", "referer", "x-forwarded-for"]);
    for (const name of ORIGINAL) expect(allowed.map((p) => p.exact)).not.toContain(name);
  });

  it("removes a client's own identity headers before ext_authz sets keyplane's", async () => {
    const chain = await filters();
    const mutation = chain.findIndex((f) => f.name === "envoy.filters.http.header_mutation");
    expect(mutation).toBeGreaterThanOrEqual(0);
    expect(mutation).toBeLessThan(chain.findIndex((f) => f.name === "envoy.filters.http.ext_authz"));
    const removed = (chain[mutation]!.typed_config as { mutations: { request_mutations: { remove: string }[] } }).mutations.request_mutations.map((m) => m.remove);
    expect(removed.sort()).toEqual([...IDENTITY].sort());
  });
});

describe("KEYPLANE_AUTH_GATEWAY in the shipped Deployment", () => {
  const envOf = (deployment: { spec: { template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } } } }) =>
    deployment.spec.template.spec.containers.find((c) => c.name === "keyplane")!.env.find((e) => e.name === "KEYPLANE_AUTH_GATEWAY")?.value;

  it("is nginx in the base, and each Component sets its gateway", async () => {
    expect(envOf((await yaml("deployment.yaml")) as never)).toBe("nginx");
    for (const gateway of ["traefik", "envoy"]) {
      const component = (await yaml(`${gateway}/kustomization.yaml`)) as { kind: string; patches: { patch: string }[] };
      expect(component.kind).toBe("Component");
      expect(component.patches.map((p) => envOf(load(p.patch) as never))).toEqual([gateway]);
      expect(AUTH_GATEWAYS).toContain(gateway);
    }
  });

  it.skipIf(spawnSync("kubectl", ["version", "--client"]).status !== 0)("renders with kubectl kustomize: the base with each Component", async () => {
    const dir = await mkdtemp(join(tmpdir(), "keyplane-kustomize-"));
    try {
      for (const gateway of ["traefik", "envoy"]) {
        // kustomize takes no absolute path to a base: the user's kustomization names it relatively.
        const base = relative(dir, DEPLOY);
        await writeFile(join(dir, "kustomization.yaml"), `resources: [${base}]\ncomponents: [${join(base, gateway)}]\n`);
        const run = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8" });
        expect(run.stderr).toBe("");
        const docs = loadAll(run.stdout) as { kind: string; metadata: { namespace?: string } }[];
        const deployment = docs.find((d) => d.kind === "Deployment")!;
        expect(envOf(deployment as never), gateway).toBe(gateway);
        expect(run.stdout.match(/KEYPLANE_AUTH_GATEWAY/g)).toHaveLength(1);
        if (gateway === "traefik") expect(docs.find((d) => d.kind === "Middleware")?.metadata.namespace).toBe("keyplane-system");
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
