import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.ts";

// The environment as keyplane reads it: defaults, and a clear error for a bad value.
describe("loadConfig", () => {
  it("has the documented defaults", () => {
    expect(loadConfig({ HOME: "/nonexistent" })).toMatchObject({
      port: 8080, host: "127.0.0.1", databaseUrl: undefined, runtimeHeader: "X-SVC-APIKey", logLevel: "info",
      databaseTimeoutMs: 5_000, staleMs: 300_000,
      operator: { mode: "auto", cluster: undefined, leaseNamespace: "default", watchNamespace: undefined, leaseDurationMs: undefined, resyncMs: undefined },
    });
  });

  it("requires a master key with DATABASE_URL", () => {
    expect(() => loadConfig({ DATABASE_URL: "postgres://db/keyplane" })).toThrow(/KEYPLANE_MASTER_KEY is required with DATABASE_URL/);
  });

  describe("throttling's settings", () => {
    it("trusts no proxy and allows 60 failures a minute by default", () => {
      const config = loadConfig({ HOME: "/nonexistent" });
      expect(config.authFailuresPerMinute).toBe(60);
      expect(config.trustedProxies.check("127.0.0.1")).toBe(false);
    });

    it("reads trusted proxies as addresses and CIDRs, IPv4 and IPv6", () => {
      const { trustedProxies } = loadConfig({ KEYPLANE_TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.1, fd00::/8" });
      expect(trustedProxies.check("10.20.30.40")).toBe(true);
      expect(trustedProxies.check("192.168.1.1")).toBe(true);
      expect(trustedProxies.check("192.168.1.2")).toBe(false);
      expect(trustedProxies.check("fd12::1", "ipv6")).toBe(true);
    });

    it("serves no metrics unless KEYPLANE_METRICS_PORT is set, and reads the port", () => {
      expect(loadConfig({}).metricsPort).toBeUndefined();
      expect(loadConfig({ KEYPLANE_METRICS_PORT: "9090" }).metricsPort).toBe(9090);
    });

    it("reads a limit of failures", () => {
      expect(loadConfig({ KEYPLANE_AUTH_FAILURES_PER_MINUTE: "5" }).authFailuresPerMinute).toBe(5);
    });

    it.each([
      [{ KEYPLANE_TRUSTED_PROXIES: "10.0.0.0/33" }, /KEYPLANE_TRUSTED_PROXIES: "10.0.0.0\/33" is neither/],
      [{ KEYPLANE_TRUSTED_PROXIES: "proxy.internal" }, /KEYPLANE_TRUSTED_PROXIES/],
      [{ KEYPLANE_AUTH_FAILURES_PER_MINUTE: "0" }, /KEYPLANE_AUTH_FAILURES_PER_MINUTE/],
      [{ KEYPLANE_AUTH_FAILURES_PER_MINUTE: "1000000001" }, /KEYPLANE_AUTH_FAILURES_PER_MINUTE/],
      [{ KEYPLANE_AUTH_FAILURES_PER_MINUTE: "many" }, /KEYPLANE_AUTH_FAILURES_PER_MINUTE/],
      [{ KEYPLANE_METRICS_PORT: "65536" }, /KEYPLANE_METRICS_PORT/],
      [{ KEYPLANE_METRICS_PORT: "metrics" }, /KEYPLANE_METRICS_PORT/],
    ])("refuses %j", (env, message) => {
      expect(() => loadConfig(env)).toThrow(message);
    });
  });

  describe("the operator's settings", () => {
    it.each([
      ["the pod's namespace for the Lease", { POD_NAMESPACE: "keyplane-system" }, { leaseNamespace: "keyplane-system" }],
      ["KEYPLANE_LEASE_NAMESPACE over the pod's", { POD_NAMESPACE: "a", KEYPLANE_LEASE_NAMESPACE: "b" }, { leaseNamespace: "b" }],
      ["the pod's name as identity", { POD_NAME: "keyplane-7d9f-x2" }, { identity: "keyplane-7d9f-x2" }],
      ["one namespace to watch", { KEYPLANE_WATCH_NAMESPACE: "team-a" }, { watchNamespace: "team-a" }],
      ["a lease duration", { KEYPLANE_LEASE_DURATION_SECONDS: "15" }, { leaseDurationMs: 15_000 }],
      ["a resync period", { KEYPLANE_RESYNC_SECONDS: "30" }, { resyncMs: 30_000 }],
      ["namespaces bound to customers by default", {}, { namespaceBinding: true }],
      ["the binding of namespaces on", { KEYPLANE_NAMESPACE_BINDING: "on" }, { namespaceBinding: true }],
      ["the binding of namespaces lifted", { KEYPLANE_NAMESPACE_BINDING: "off" }, { namespaceBinding: false }],
      ["a KUBECONFIG as where the cluster is", { KUBECONFIG: "/etc/k" }, { cluster: "KUBECONFIG=/etc/k" }],
      ["no cluster for a service host without a service account token", { KUBERNETES_SERVICE_HOST: "10.0.0.1" }, { cluster: undefined }],
    ])("reads %s", (_what, env, expected) => {
      expect(loadConfig({ HOME: "/nonexistent", ...env }).operator).toMatchObject(expected);
    });

    it("names the host and process without a pod name", () => {
      expect(loadConfig({}).operator.identity).toMatch(new RegExp(`-${process.pid}$`));
    });

    it("refuses a lease duration that is not a positive number", () => {
      expect(() => loadConfig({ KEYPLANE_LEASE_DURATION_SECONDS: "soon" })).toThrow(/KEYPLANE_LEASE_DURATION_SECONDS/);
    });

    it.each(["false", "OFF", "no", ""])("refuses KEYPLANE_NAMESPACE_BINDING=%j: only on or off lift or keep the rule", (value) => {
      expect(() => loadConfig({ KEYPLANE_NAMESPACE_BINDING: value })).toThrow(/KEYPLANE_NAMESPACE_BINDING/);
    });
  });

  describe("leak response's settings", () => {
    it("rotates at once and reads GitHub's own key list by default", () => {
      expect(loadConfig({ HOME: "/nonexistent" }).leaks).toEqual({
        policy: "rotate", graceSeconds: 0, githubKeysUrl: "https://api.github.com/meta/public_keys/secret_scanning",
      });
    });

    it("reads a policy, a grace period and a key list's URL", () => {
      const env = { HOME: "/nonexistent", KEYPLANE_LEAK_POLICY: "notify", KEYPLANE_LEAK_GRACE_SECONDS: "300", KEYPLANE_GITHUB_KEYS_URL: "http://127.0.0.1:9/keys" };
      expect(loadConfig(env).leaks).toEqual({ policy: "notify", graceSeconds: 300, githubKeysUrl: "http://127.0.0.1:9/keys" });
    });

    it.each([
      ["a policy it does not know", { KEYPLANE_LEAK_POLICY: "delete" }, /KEYPLANE_LEAK_POLICY/],
      ["a grace period over thirty days", { KEYPLANE_LEAK_GRACE_SECONDS: "2592001" }, /KEYPLANE_LEAK_GRACE_SECONDS/],
      ["a negative grace period", { KEYPLANE_LEAK_GRACE_SECONDS: "-1" }, /KEYPLANE_LEAK_GRACE_SECONDS/],
      ["a key list that is no http(s) URL", { KEYPLANE_GITHUB_KEYS_URL: "file:///etc/keys" }, /KEYPLANE_GITHUB_KEYS_URL must be an http\(s\) URL/],
    ])("refuses %s", (_name, env, message) => {
      expect(() => loadConfig({ HOME: "/nonexistent", ...env })).toThrow(message);
    });
  });

  describe("webhooks' settings", () => {
    it("send to https and public addresses only, with notices at 7 and 1 days, by default", () => {
      expect(loadConfig({}).webhooks).toEqual({ allowHttp: false, allowPrivate: false, expiryNotices: [604_800, 86_400] });
    });

    it("read the flags and the notices", () => {
      const config = loadConfig({ KEYPLANE_WEBHOOK_ALLOW_HTTP: "true", KEYPLANE_WEBHOOK_ALLOW_PRIVATE: "true", KEYPLANE_EXPIRY_NOTICES: "1d,30m,14d" });
      expect(config.webhooks).toEqual({ allowHttp: true, allowPrivate: true, expiryNotices: [1_209_600, 86_400, 1_800] });
    });

    it("refuse a flag that is not true or false, and a notice without its unit", () => {
      expect(() => loadConfig({ KEYPLANE_WEBHOOK_ALLOW_HTTP: "yes" })).toThrow(/KEYPLANE_WEBHOOK_ALLOW_HTTP: must be true or false/);
      expect(() => loadConfig({ KEYPLANE_EXPIRY_NOTICES: "7" })).toThrow(/KEYPLANE_EXPIRY_NOTICES: "7" is not a duration/);
    });
  });

  describe("usage analytics' settings", () => {
    it("count, and keep minutes 48 hours, hours 90 days and days 730 days, by default", () => {
      expect(loadConfig({}).analytics).toEqual({ counting: true, retention: { minute: 48 * 3_600_000, hour: 90 * 86_400_000, day: 730 * 86_400_000 } });
    });

    it("read off and a retention", () => {
      expect(loadConfig({ KEYPLANE_ANALYTICS: "off", KEYPLANE_ANALYTICS_RETENTION: "6h,30d,365d" }).analytics).toEqual({
        counting: false, retention: { minute: 6 * 3_600_000, hour: 30 * 86_400_000, day: 365 * 86_400_000 },
      });
    });

    it("refuse anything else, saying what is wrong", () => {
      expect(() => loadConfig({ KEYPLANE_ANALYTICS: "no" })).toThrow(/KEYPLANE_ANALYTICS/);
      expect(() => loadConfig({ KEYPLANE_ANALYTICS_RETENTION: "48h,90d" })).toThrow(/KEYPLANE_ANALYTICS_RETENTION: three durations are needed/);
    });
  });

  describe("KEYPLANE_AUTH_GATEWAY", () => {
    it("is nginx unless set, and one of nginx, traefik or envoy", () => {
      expect(loadConfig({ HOME: "/nonexistent" }).authGateway).toBe("nginx");
      for (const gateway of ["nginx", "traefik", "envoy"]) expect(loadConfig({ HOME: "/nonexistent", KEYPLANE_AUTH_GATEWAY: gateway }).authGateway).toBe(gateway);
    });

    it("refuses anything else, saying what it takes", () => {
      for (const bad of ["", "haproxy", "NGINX", "nginx,traefik"]) {
        expect(() => loadConfig({ HOME: "/nonexistent", KEYPLANE_AUTH_GATEWAY: bad }), bad).toThrow(/KEYPLANE_AUTH_GATEWAY.*nginx, traefik, envoy/);
      }
    });
  });
});
