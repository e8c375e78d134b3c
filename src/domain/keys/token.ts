import { hash, randomBytes } from "node:crypto";

// keyId = "XI" + 32 upper-case hex digits of a CSPRNG (128 bits): the bearer token itself.
export const TOKEN_LENGTH = 34;

export function newToken(): string {
  return "XI" + randomBytes(16).toString("hex").toUpperCase();
}

/** Whether `value` is of the keyId form: checked by hand, since every verification starts here (a regular expression costs several times more). */
export function isTokenFormat(value: string): boolean {
  if (value.length !== TOKEN_LENGTH || !value.startsWith("XI")) return false;
  for (let i = 2; i < TOKEN_LENGTH; i++) {
    const c = value.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46))) return false; // 0-9, A-F
  }
  return true;
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
