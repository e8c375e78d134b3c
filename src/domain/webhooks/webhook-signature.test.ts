import { describe, expect, it } from "vitest";
import { messageBody } from "./webhook.ts";
import { newWebhookSecret, secretKey, webhookHeaders, webhookSignature } from "./webhook-signature.ts";

describe("webhook signatures (Standard Webhooks 1.0)", () => {
  it("match the specification's published test vector", () => {
    const key = secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(webhookSignature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}'))
      .toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("change with the id, the timestamp, the body and the secret", () => {
    const key = secretKey(newWebhookSecret());
    const base = webhookSignature(key, "msg_1", 1, "{}");
    expect(webhookSignature(key, "msg_2", 1, "{}")).not.toBe(base);
    expect(webhookSignature(key, "msg_1", 2, "{}")).not.toBe(base);
    expect(webhookSignature(key, "msg_1", 1, "{ }")).not.toBe(base);
    expect(webhookSignature(secretKey(newWebhookSecret()), "msg_1", 1, "{}")).not.toBe(base);
  });

  it("come with the id, the attempt's time in Unix seconds and the JSON content type", () => {
    const key = secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    const headers = webhookHeaders(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", new Date(1614265330_999), '{"test": 2432232314}');
    expect(headers).toEqual({
      "content-type": "application/json",
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    });
  });

  it("are keyed by secrets of whsec_ and 32 random bytes", () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secretKey(secret).symmetricKeySize).toBe(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });
});

describe("a message's body", () => {
  it("is the type, the time and the event, in that order, the event's text as given", () => {
    expect(messageBody("key.created", new Date("2026-11-23T10:00:00Z"), '{"id":1,"b":2,"a":1}'))
      .toBe('{"type":"key.created","timestamp":"2026-11-23T10:00:00.000Z","data":{"event":{"id":1,"b":2,"a":1}}}');
  });
});
