import { hash, randomBytes } from "node:crypto";

// keyId = "XI" + 32 upper-case hex digits of a CSPRNG (128 bits): the bearer token itself.
const TOKEN_PATTERN = /^XI[0-9A-F]{32}$/;
export const TOKEN_LENGTH = 34;

export function newToken(): string {
  return "XI" + randomBytes(16).toString("hex").toUpperCase();
}

export function isTokenFormat(value: string): boolean {
  return value.length === TOKEN_LENGTH && TOKEN_PATTERN.test(value);
}

/**
 * The look-up hash of a token, as stored. A plain SHA-256 is enough: tokens carry 128 random bits, so
 * there is nothing for a slow password hash to protect against, and authentication stays one hash away.
 */
export function tokenHash(token: string): Buffer {
  return Buffer.from(tokenHashHex(token), "hex");
}

/** The look-up hash in hex, as the verification cache keys it: Node's one-shot hash gives hex fastest. */
export function tokenHashHex(token: string): string {
  return hash("sha256", token);
}

/** What a status field or log may show of a token: its prefix and last four characters. */
export function tokenHint(token: string): string {
  return `XI…${token.slice(-4)}`;
}
