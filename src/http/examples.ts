import { VERSION } from "../version.ts";

// Examples for /openapi.json: one for each body the API takes or gives, consistent with one another
// (the customer acme, its domain sip.acme.example, the voice application ivr, one subscriber).
const at = "2026-11-23T10:00:00.000Z";
/** acme's plan: 100 calls a second for all its keys together, and 10,000 credits a month. */
const plan = {
  ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1, methods: ["POST"], paths: ["/customers/*/calls/**"] }],
  credits: { remaining: 9_412, refill: { amount: 10_000, interval: "monthly", day: 1 } },
};
/** The billing key's own policy: from the office's network and the console only. */
const keyPolicy = { restrictions: { ips: ["203.0.113.0/24", "2001:db8::/32"], referrers: ["https://*.acme.example/*"] } };
const customer = { id: 1, uuid: "6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f", name: "acme", active: true, policy: plan, createdAt: at, modifiedAt: at };
const domain = { id: 10, uuid: "0b5e9c1d-2f4a-4e6b-8c7d-9e0f1a2b3c4d", tenantId: 1, domain: "sip.acme.example", active: true, policy: null, createdAt: at, modifiedAt: at };
const application = {
  id: 100, uuid: "3c8d2e1f-4a5b-4c6d-8e7f-0a1b2c3d4e5f", tenantId: 1, domainId: 10, name: "ivr",
  url: "https://ivr.acme.example/answer", method: "POST", active: true, policy: null, createdAt: at, modifiedAt: at,
};
const subscriber = { id: 1000, uuid: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d", tenantId: 1, domainId: 10, msisdn: "12125550100", active: true, policy: null, createdAt: at, modifiedAt: at };
const user = { id: 7, uuid: "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a", tenantId: 1, domainId: null, email: "owner@acme.example", active: true, createdAt: at, modifiedAt: at };
const key = {
  id: 17, keyId: "XI0123456789ABCDEF0123456789AB7798", name: "billing", active: true, type: "customer",
  tenantId: 1, domainId: 10, applicationId: null, subscriberId: null, userId: null, secret: null,
  createdAt: at, modifiedAt: at, deletedAt: null, activeAt: at, expiresAt: "2027-02-21T10:00:00.000Z", lastUsedAt: "2026-11-23T10:05:00.000Z",
  replacedBy: null, parentId: 12, policy: keyPolicy, tenant: customer, "tenant-id": 1, domain, "domain-id": 10,
};

const webhook = {
  id: 3, url: "https://hooks.acme.example/keyplane", events: ["key.rotated", "key.leaked", "key.expiring"], description: "Key changes for the ops channel",
  active: true, createdAt: at, modifiedAt: at, tenantId: 1, domainId: 10, applicationId: null, subscriberId: null,
};

function withoutKeyId({ keyId: _keyId, ...rest }: typeof key) {
  return rest;
}

export const API_EXAMPLES = {
  Key: key,
  Policy: plan,
  Credits: { remaining: 9_412, nextRefillAt: "2026-12-01T00:00:00.000Z" },
  KeyUsage: {
    ratelimits: [
      { name: "calls", scope: "customer", limit: 100, windowSeconds: 1, remaining: 37, reset: 1 },
      { name: "daily", scope: "key", limit: 50_000, windowSeconds: 86_400, remaining: 41_208, reset: 30_512 },
    ],
    credits: { scope: "key", remaining: 9_412, nextRefillAt: "2026-12-01T00:00:00.000Z" },
  },
  CreditsChange: { add: 5_000 },
  Customer: customer,
  Domain: domain,
  Application: application,
  Subscriber: subscriber,
  User: user,
  UserWithKey: {
    ...user,
    key: {
      ...key, id: 18, keyId: "XI00112233445566778899AABBCCDDEEFF", name: "owner@acme.example", type: "user", domainId: null, userId: 7,
      expiresAt: null, lastUsedAt: null, policy: null, domain: undefined, "domain-id": undefined, user, "user-id": 7,
    },
  },
  KeyEvent: {
    id: 4711, at: "2026-11-23T11:00:00.000Z", action: "rotated",
    key: { id: 17, name: "billing", type: "customer", tenantId: 1, domainId: 10, applicationId: null, subscriberId: null },
    actor: { type: "key", id: 3, name: "backend" },
    changes: { replacedBy: [null, 19], expiresAt: ["2027-02-21T10:00:00.000Z", "2026-11-23T12:00:00.000Z"] },
    requestId: "5b0f3c2e-8a1d-4f6b-9c7e-2d4a6b8c0e1f",
  },
  Error: { status: 404, error: "not_found", message: "No such key." },
  Health: { status: "ok" },
  OpenApiDocument: { openapi: "3.1.0", info: { title: "keyplane", version: VERSION }, paths: {} },
  // A key whose customer's policy has a rate limit and credits: every verdict says what each has left.
  Verdict: {
    valid: true, code: "VALID", key: { ...withoutKeyId(key), level: "domain" },
    ratelimits: [{ name: "calls", scope: "customer", limit: 100, remaining: 42, reset: 1, exceeded: false }], credits: { remaining: 9958 },
  },
  // The key billing's token found in a public repository: it is a keyplane key (docs/leaks.md).
  LeakLabel: { token_hash: "c840d4031673276276c95b360ac4ec86945202e7fb35bb5f58c4998d4bca0631", token_type: "keyplane_api_key", label: "true_positive" },
  // A webhook of acme's domain key, for rotations and leaks (docs/webhooks.md).
  Webhook: webhook,
  NewWebhook: { ...webhook, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=" },
  WebhookDelivery: {
    id: 812, type: "key.rotated", state: "pending", createdAt: "2026-11-23T11:00:00.000Z",
    attempts: [
      { at: "2026-11-23T11:00:00.120Z", status: 503, error: null, durationMs: 41 },
      { at: "2026-11-23T11:00:05.310Z", status: null, error: "timed out after 15 s", durationMs: 15_000 },
    ],
    nextAttemptAt: "2026-11-23T11:05:21.000Z",
  },
  // billing's last three hours: a quiet one, then calls, a few refused by acme's rate limit.
  KeyAnalytics: {
    interval: "hour", from: "2026-11-23T08:00:00.000Z", to: "2026-11-23T11:00:00.000Z",
    buckets: [
      { start: "2026-11-23T08:00:00.000Z", valid: 0, restricted: 0, rateLimited: 0, usageExceeded: 0, forbidden: 0, disabled: 0, expired: 0, credits: 0 },
      { start: "2026-11-23T09:00:00.000Z", valid: 1_204, restricted: 2, rateLimited: 17, usageExceeded: 0, forbidden: 1, disabled: 0, expired: 0, credits: 1_204 },
      { start: "2026-11-23T10:00:00.000Z", valid: 588, restricted: 0, rateLimited: 0, usageExceeded: 0, forbidden: 0, disabled: 0, expired: 0, credits: 588 },
    ],
  },
  ScopeAnalytics: {
    interval: "day", from: "2026-11-22T00:00:00.000Z", to: "2026-11-24T00:00:00.000Z",
    buckets: [
      { start: "2026-11-22T00:00:00.000Z", valid: 20_117, restricted: 3, rateLimited: 412, usageExceeded: 0, forbidden: 9, disabled: 0, expired: 2, credits: 20_117 },
      { start: "2026-11-23T00:00:00.000Z", valid: 1_792, restricted: 2, rateLimited: 17, usageExceeded: 0, forbidden: 1, disabled: 0, expired: 0, credits: 1_792 },
    ],
    top: [{ id: 17, name: "billing", requests: 22_355, valid: 21_909, restricted: 5, rateLimited: 429, usageExceeded: 0, forbidden: 10, disabled: 0, expired: 2, credits: 21_909 }],
  },
  /** Request bodies, by operationId; a key's provisioning and update bodies are the same everywhere. */
  requests: {} as Record<string, unknown>,
};

const provision = { name: "billing", active: true, expiresIn: 7_776_000 };
const update = { active: false };
const rotate = { gracePeriodSeconds: 3600 };
for (const noun of ["", "Customer", "CustomerDomain", "CustomerDomainApplication", "CustomerDomainSubscriber", "Domain", "DomainApplication", "DomainSubscriber", "Application", "Subscriber"]) {
  API_EXAMPLES.requests[`provision${noun}Key`] = provision;
  API_EXAMPLES.requests[`update${noun}Key`] = update;
  API_EXAMPLES.requests[`rotate${noun}Key`] = rotate;
}
Object.assign(API_EXAMPLES.requests, {
  createCustomer: { name: "acme" },
  createDomain: { domain: "sip.acme.example" },
  createApplication: { name: "ivr", url: "https://ivr.acme.example/answer", method: "POST" },
  createSubscriber: { msisdn: "12125550100" },
  createUser: { email: "owner@acme.example" },
  provisionBootstrapKey: { name: "backend" },
  rotateSelfKey: rotate,
  invokeApplication: { call: "+12125550100" },
  reportGithubLeaks: [{
    token: "XI0123456789ABCDEF0123456789AB7798", type: "keyplane_api_key",
    url: "https://github.com/octocat/Hello-World/blob/12345600b9cbe38a219f39a9941c9319b600c002/config.env", source: "content",
  }],
  reportLeaks: { tokens: ["XI0123456789ABCDEF0123456789AB7798"], url: "https://paste.example/a1b2c3", source: "paste site" },
  createWebhook: { url: "https://hooks.acme.example/keyplane", events: ["key.rotated", "key.leaked", "key.expiring"], description: "Key changes for the ops channel" },
  updateWebhook: { active: false },
  createAdminWebhook: { url: "https://hooks.platform.example/keyplane", scope: { customer: "acme" } },
  updateAdminWebhook: { events: ["key.leaked"] },
  verifyKey: { key: "XI0123456789ABCDEF0123456789AB7798", path: "/customers/acme/domains/sip.acme.example/calls", method: "POST", ip: "203.0.113.7", cost: 1 },
});
