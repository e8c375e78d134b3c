import { describe, expect, it } from "vitest";
import type { Key } from "../../domain/model.ts";
import { keyJsonText } from "./key-text.ts";
import { keyJson } from "./present.ts";

// The list's writer must give exactly what every other answer gives for the same key.
const at = (iso: string) => new Date(iso);
const customer = { id: 1, uuid: "6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f", name: "acme", active: true, policy: null, createdAt: at("2026-01-01T00:00:00Z"), modifiedAt: at("2026-01-02T00:00:00Z") };
const domain = { id: 10, uuid: "0b5e9c1d-2f4a-4e6b-8c7d-9e0f1a2b3c4d", tenantId: 1, domain: "sip.acme.example", active: true, policy: null, createdAt: at("2026-01-03T00:00:00Z"), modifiedAt: at("2026-01-03T00:00:00Z") };
const application = { id: 100, uuid: "3c8d2e1f-4a5b-4c6d-8e7f-0a1b2c3d4e5f", tenantId: 1, domainId: 10, name: "ivr", url: null, method: "POST" as const, active: true, policy: null, createdAt: at("2026-01-04T00:00:00Z"), modifiedAt: at("2026-01-04T00:00:00Z") };
const subscriber = { id: 1000, uuid: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d", tenantId: 1, domainId: 10, msisdn: "+12125550100", active: false, policy: null, createdAt: at("2026-01-05T00:00:00Z"), modifiedAt: at("2026-01-05T00:00:00Z") };
const user = { id: 7, uuid: "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a", tenantId: 1, domainId: null, email: "o'wner\"@acme.example", active: true, createdAt: at("2026-01-06T00:00:00Z"), modifiedAt: at("2026-01-06T00:00:00Z") };
const base: Key = {
  id: 17, keyId: "XI0123456789ABCDEF0123456789AB7798", name: "billing", active: true, type: "customer",
  tenantId: 1, domainId: null, applicationId: null, subscriberId: null, userId: null, managedBy: null,
  createdAt: at("2026-11-23T10:00:00.123Z"), modifiedAt: at("2026-11-23T10:00:00.123Z"), deletedAt: null, activeAt: null,
  expiresAt: null, lastUsedAt: null, replacedBy: null, parentId: null, lineage: 17, ancestors: [], policy: null, tenant: customer, domain: null, application: null, subscriber: null, user: null,
};

describe("keyJsonText", () => {
  it.each<[string, Key]>([
    ["a customer key", base],
    ["a domain key, expiring, used, replaced", { ...base, domainId: 10, domain, activeAt: at("2026-11-23T11:00:00Z"), expiresAt: at("2027-01-01T00:00:00Z"), lastUsedAt: at("2026-11-23T12:00:00.5Z"), replacedBy: 18 }],
    ["a key another key made", { ...base, parentId: 12, lineage: 9, ancestors: [3, 9] }],
    ["an application key", { ...base, type: "application", domainId: 10, applicationId: 100, domain, application }],
    ["a subscriber key", { ...base, type: "subscriber", domainId: 10, subscriberId: 1000, domain, subscriber, active: false }],
    ["a key with a policy, in a customer with one", {
      ...base, policy: { restrictions: { ips: ["203.0.113.0/24"], referrers: ["https://*.acme.example/\"*"] } },
      tenant: { ...customer, policy: { ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }], credits: { remaining: 5, refill: { amount: 10, interval: "daily" } } } },
    }],
    ["a user's key with a name to escape", { ...base, type: "user", userId: 7, user, name: "o'wner\"@acme.example \u2028 \\ \u0000" }],
  ])("writes %s as keyJson does", (_what, key) => {
    expect(keyJsonText(key)).toBe(JSON.stringify(keyJson(key)));
    expect(keyJsonText(key)).toBe(JSON.stringify(keyJson(key))); // and again, from its caches
  });
});
