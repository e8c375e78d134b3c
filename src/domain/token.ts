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
 * The look-up hash of a token. A plain SHA-256 is enough: tokens carry 128 random bits, so there is
 * nothing for a slow password hash to protect against, and authentication stays one hash away.
 */
export function tokenHash(token: string): Buffer {
  // Node's one-shot hash gives a hex string in a third of the time it takes to give a Buffer.
  return Buffer.from(hash("sha256", token), "hex");
}

/** What a status field or log may show of a token: its prefix and last four characters. */
export function tokenHint(token: string): string {
  return `XI…${token.slice(-4)}`;
}
