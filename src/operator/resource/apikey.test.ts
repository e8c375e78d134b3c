import { describe, expect, it } from "vitest";
import { apiKeySpecSchema, resolveSpec } from "./apikey.ts";

const acme = { customer: "acme" };
const domain = { domain: "sip.acme.example" };

describe("ApiKey spec: scope combinations", () => {
  const cases: { name: string; spec: object; error?: string }[] = [
    { name: "customer alone", spec: acme },
    { name: "customer and domain", spec: { ...acme, ...domain } },
    { name: "application in a domain", spec: { ...acme, ...domain, application: "ivr" } },
    { name: "subscriber in a domain", spec: { ...acme, ...domain, subscriber: "12125550100" } },
    { name: "application without domain", spec: { ...acme, application: "ivr" }, error: "application needs domain" },
    { name: "subscriber without domain", spec: { ...acme, subscriber: "12125550100" }, error: "subscriber needs domain" },
    {
      name: "application and subscriber in a domain",
      spec: { ...acme, ...domain, application: "ivr", subscriber: "12125550100" },
      error: "application and subscriber exclude each other",
    },
    {
      name: "application and subscriber without domain",
      spec: { ...acme, application: "ivr", subscriber: "12125550100" },
      error: "application needs domain",
    },
    { name: "no customer", spec: domain, error: "customer" },
  ];
  for (const c of cases) {
    it(`${c.error ? "refuses" : "accepts"} ${c.name}`, () => {
      const result = apiKeySpecSchema.safeParse(c.spec);
      expect(result.success).toBe(!c.error);
      if (c.error) expect(result.error?.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("\n")).toContain(c.error);
    });
  }

  it("reports every broken rule, on the field that breaks it", () => {
    const result = apiKeySpecSchema.safeParse({ ...acme, application: "ivr", subscriber: "12125550100" });
    expect(result.error?.issues.map((i) => i.path.join("."))).toEqual(["application", "subscriber", "subscriber"]);
  });
});

describe("ApiKey spec: names", () => {
  const cases: { name: string; spec: object; valid: boolean }[] = [
    { name: "customer by id", spec: { customer: "17" }, valid: true },
    { name: "customer by uuid", spec: { customer: "6f1c2a9e-3b1d-4c8e-9a51-0d2b7c4e8f10" }, valid: true },
    { name: "empty customer", spec: { customer: "" }, valid: false },
    { name: "customer with a slash", spec: { customer: "acme/x" }, valid: false },
    { name: "customer of 65 characters", spec: { customer: "a".repeat(65) }, valid: false },
    { name: "domain with upper case", spec: { ...acme, domain: "SIP.Acme.example" }, valid: true },
    { name: "domain with an empty label", spec: { ...acme, domain: "sip..acme" }, valid: false },
    { name: "domain label ending in a hyphen", spec: { ...acme, domain: "sip-.acme" }, valid: false },
    { name: "keyName of 128 characters", spec: { ...acme, keyName: "k".repeat(128) }, valid: true },
    { name: "keyName of 129 characters", spec: { ...acme, keyName: "k".repeat(129) }, valid: false },
    { name: "empty keyName", spec: { ...acme, keyName: "" }, valid: false },
    { name: "keyName with spaces", spec: { ...acme, keyName: "billing key (prod)" }, valid: true },
    { name: "keyName with a line break", spec: { ...acme, keyName: "billing\nkey" }, valid: false },
    { name: "subscriber by msisdn with +", spec: { ...acme, ...domain, subscriber: "+12125550100" }, valid: true },
    { name: "subscriber with a space", spec: { ...acme, ...domain, subscriber: "212 555" }, valid: false },
    { name: "secret name a DNS subdomain", spec: { ...acme, secret: { name: "billing.api-key" } }, valid: true },
    { name: "secret name with upper case", spec: { ...acme, secret: { name: "Billing" } }, valid: false },
    { name: "secret name with underscore", spec: { ...acme, secret: { name: "billing_key" } }, valid: false },
    { name: "secret name starting with a hyphen", spec: { ...acme, secret: { name: "-billing" } }, valid: false },
    { name: "secret name of 254 characters", spec: { ...acme, secret: { name: "a".repeat(254) } }, valid: false },
    { name: "secret key with dots and dashes", spec: { ...acme, secret: { key: "api_key.v1-prod" } }, valid: true },
    { name: "secret key starting with one dot", spec: { ...acme, secret: { key: ".apiKey" } }, valid: true },
    { name: "secret key '.'", spec: { ...acme, secret: { key: "." } }, valid: false },
    { name: "secret key '..'", spec: { ...acme, secret: { key: ".." } }, valid: false },
    { name: "secret key starting with '..'", spec: { ...acme, secret: { key: "..data" } }, valid: false },
    { name: "secret key with a slash", spec: { ...acme, secret: { key: "a/b" } }, valid: false },
    { name: "empty secret key", spec: { ...acme, secret: { key: "" } }, valid: false },
    { name: "labels and annotations", spec: { ...acme, secret: { labels: { app: "billing" }, annotations: { a: "b" } } }, valid: true },
    { name: "a label that is not a string", spec: { ...acme, secret: { labels: { replicas: 2 } } }, valid: false },
    { name: "deletionPolicy Retain", spec: { ...acme, deletionPolicy: "Retain" }, valid: true },
    { name: "deletionPolicy Orphan", spec: { ...acme, deletionPolicy: "Orphan" }, valid: false },
    { name: "active as a string", spec: { ...acme, active: "yes" }, valid: false },
  ];
  for (const c of cases) {
    it(`${c.valid ? "accepts" : "refuses"} ${c.name}`, () => {
      expect(apiKeySpecSchema.safeParse(c.spec).success).toBe(c.valid);
    });
  }
});

describe("ApiKey spec: defaults", () => {
  it("fills active, deletionPolicy and the Secret's data key, and leaves names to metadata.name", () => {
    expect(apiKeySpecSchema.parse(acme)).toEqual({
      customer: "acme",
      active: true,
      deletionPolicy: "Delete",
      secret: { key: "apiKey", format: "keyplane" },
    });
  });

  it("keeps what the spec says", () => {
    const spec = { ...acme, active: false, deletionPolicy: "Retain", secret: { name: "s", key: "k", format: "envoy-gateway" } };
    expect(apiKeySpecSchema.parse(spec)).toEqual(spec);
  });
});

describe("resolveSpec", () => {
  it("defaults keyName and the Secret's name to metadata.name", () => {
    const result = resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, ...domain } });
    expect(result).toEqual({
      ok: true,
      spec: {
        customer: "acme",
        domain: "sip.acme.example",
        keyName: "billing",
        active: true,
        secret: { name: "billing", key: "apiKey", format: "keyplane", labels: {}, annotations: {} },
        deletionPolicy: "Delete",
        policy: null,
      },
    });
  });

  it("prefers the spec's own names", () => {
    const spec = { ...acme, keyName: "Billing key", secret: { name: "billing-api-key", labels: { app: "billing" } } };
    const result = resolveSpec({ metadata: { name: "billing" }, spec });
    expect(result.ok && result.spec.keyName).toBe("Billing key");
    expect(result.ok && result.spec.secret).toEqual({ name: "billing-api-key", key: "apiKey", format: "keyplane", labels: { app: "billing" }, annotations: {} });
  });

  it("says which field is wrong, for the Ready condition's message", () => {
    const result = resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, application: "ivr" } });
    expect(result).toEqual({ ok: false, message: "spec.application: application needs domain: an application is named within its domain" });
  });

  it("refuses a metadata.name too long to be the key's name, unless keyName is set", () => {
    const long = { metadata: { name: "a".repeat(129) }, spec: acme };
    expect(resolveSpec(long)).toMatchObject({ ok: false, message: expect.stringContaining("spec.keyName") });
    expect(resolveSpec({ ...long, spec: { ...acme, keyName: "short" } }).ok).toBe(true);
  });

  it("refuses a missing spec", () => {
    expect(resolveSpec({ metadata: { name: "billing" } }).ok).toBe(false);
  });
});

describe("spec.rotation", () => {
  const rotating = (rotation: object) => resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, rotation } });

  it("reads the durations in milliseconds, with the defaults of gracePeriod and restartWorkloads", () => {
    const result = rotating({ every: "720h" });
    expect(result.ok && result.spec.rotation).toEqual({ everyMs: 720 * 3_600_000, gracePeriodMs: 3_600_000, restartWorkloads: false });
    expect(rotating({ every: "10s", gracePeriod: "0s", restartWorkloads: true })).toMatchObject({
      ok: true,
      spec: { rotation: { everyMs: 10_000, gracePeriodMs: 0, restartWorkloads: true } },
    });
  });

  it("leaves rotation out when the spec has none", () => {
    const result = resolveSpec({ metadata: { name: "billing" }, spec: acme });
    expect(result.ok && result.spec.rotation).toBeUndefined();
  });

  it.each([
    [{ every: "9s" }, "spec.rotation.every: must be at least 10s"],
    [{ every: "1h", gracePeriod: "721h" }, "spec.rotation.gracePeriod: must be at most 720h"],
    [{ every: "1d" }, "spec.rotation.every: must be a Go duration of h, m and s, such as 720h or 1h30m"],
  ])("refuses %j, for the Ready condition's message", (rotation, message) => {
    expect(rotating(rotation)).toEqual({ ok: false, message });
  });
});

describe("spec.secret.format", () => {
  it.each(["keyplane", "envoy-gateway"])("accepts %s", (format) => {
    expect(resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, secret: { format } } })).toMatchObject({ ok: true, spec: { secret: { format } } });
  });

  it("refuses a format it does not know", () => {
    expect(resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, secret: { format: "kong" } } }).ok).toBe(false);
  });
});

describe("spec.policy", () => {
  const withPolicy = (policy: unknown) => resolveSpec({ metadata: { name: "billing" }, spec: { ...acme, policy } });
  const policy = {
    restrictions: { ips: ["203.0.113.0/24", "2001:db8::/32"], methods: ["GET", "POST"], paths: ["/customers/acme/calls/**"] },
    ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1, methods: ["POST"] }],
    credits: { remaining: 10_000, refill: { amount: 10_000, interval: "monthly", day: 1 } },
    leakPolicy: "rotate",
  };

  it("is the key's own policy, as written", () => {
    expect(withPolicy(policy)).toEqual({ ok: true, spec: expect.objectContaining({ policy }) });
  });

  it.each([
    ["an address that is none", { restrictions: { ips: ["203.0.113.300"] } }, /^spec\.policy: restrictions\.ips\[0\]: /],
    ["a path pattern that is none", { restrictions: { paths: ["customers"] } }, /^spec\.policy: restrictions\.paths\[0\]: /],
    ["two limits of one name", { ratelimits: [{ name: "a", limit: 1, windowSeconds: 1 }, { name: "a", limit: 2, windowSeconds: 1 }] }, /^spec\.policy: ratelimits/],
    ["a limit of 0", { ratelimits: [{ name: "a", limit: 0, windowSeconds: 1 }] }, /^spec\.policy\.ratelimits\.0\.limit: /],
    ["eleven limits", { ratelimits: Array.from({ length: 11 }, (_, i) => ({ name: `l${i}`, limit: 1, windowSeconds: 1 })) }, /^spec\.policy\.ratelimits: /],
    ["credits above 10^12", { credits: { remaining: 1e12 + 1 } }, /^spec\.policy\.credits\.remaining: /],
    ["a refill interval it does not know", { credits: { remaining: 1, refill: { amount: 1, interval: "weekly" } } }, /^spec\.policy\.credits\.refill\.interval: /],
    ["a leak policy it does not know", { leakPolicy: "revoke" }, /^spec\.policy\.leakPolicy: /],
    ["a lower-case method", { restrictions: { methods: ["get"] } }, /^spec\.policy\.restrictions\.methods\.0: /],
    ["an empty list", { restrictions: { ips: [] } }, /^spec\.policy\.restrictions\.ips: /],
    ["a NUL in an entry", { restrictions: { paths: ["/customers/\u0000"] } }, /^spec\.policy: an entry must be well-formed Unicode/],
  ])("refuses %s, saying where (InvalidSpec)", (_name, bad, message) => {
    const result = withPolicy(bad);
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.message).toMatch(message);
  });
});
