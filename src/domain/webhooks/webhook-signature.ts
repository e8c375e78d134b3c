import { createHmac, createSecretKey, randomBytes, type KeyObject } from "node:crypto";

// Standard Webhooks 1.0 signatures (docs/webhooks.md): `v1,` + base64 of HMAC-SHA256 over
// "{webhook-id}.{webhook-timestamp}.{body}", keyed with the bytes the secret's base64 encodes.
export const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(bytes: Buffer = randomBytes(SECRET_BYTES)): string {
  return SECRET_PREFIX + bytes.toString("base64");
}

/**
 * The HMAC key a secret stands for: its base64 part, decoded (with or without the `whsec_` prefix), as a
 * KeyObject, prepared once: a raw Buffer would be prepared again on every signature.
 */
export function secretKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64"));
}

/** The `webhook-signature` value of one attempt; `timestamp` in Unix seconds. */
export function webhookSignature(key: KeyObject, msgId: string, timestamp: number, body: string): string {
  return "v1," + createHmac("sha256", key).update(`${msgId}.${timestamp}.${body}`).digest("base64");
}

/** The headers of one attempt made at `at`. */
export function webhookHeaders(key: KeyObject, msgId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    "content-type": "application/json",
    "webhook-id": msgId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": webhookSignature(key, msgId, timestamp, body),
  };
}
