import { createPublicKey, verify, type KeyObject } from "node:crypto";

// GitHub's signature on a secret scanning report (docs/leaks.md): ECDSA on P-256 with SHA-256 over the
// raw body, DER-encoded, in base64 (`Github-Public-Key-Signature`), by the key that
// `Github-Public-Key-Identifier` names in GitHub's published list. Pure: the list is fetched elsewhere.

/** What GitHub's list gives for each key: `{public_keys: [{key_identifier, key (PEM), is_current}]}`. */
export type SigningKeys = ReadonlyMap<string, KeyObject>;

/**
 * The P-256 keys of a key list, by identifier. Entries that are not well-formed, or hold another kind
 * of key, are left out: they could not have made a signature this accepts, and one bad entry must not
 * take the others with it.
 */
export function parseSigningKeys(list: unknown): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const entries = (list as { public_keys?: unknown } | null)?.public_keys;
  if (!Array.isArray(entries)) return keys;
  for (const entry of entries as unknown[]) {
    const { key_identifier: id, key: pem } = (entry ?? {}) as { key_identifier?: unknown; key?: unknown };
    if (typeof id !== "string" || id === "" || typeof pem !== "string") continue;
    const key = p256Key(pem);
    if (key) keys.set(id, key);
  }
  return keys;
}

function p256Key(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1" ? key : undefined;
  } catch {
    return undefined;
  }
}

/** A DER ECDSA P-256 signature is at most 72 bytes: 96 characters of base64, with room to spare. */
const SIGNATURE_MAX = 256;
/** Strict base64: Buffer.from(.., "base64") skips what it cannot read, so "any text" would decode to something. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Whether `signature` (the header's text) is `key`'s signature over `body`. Never throws. */
export function signatureValid(body: Uint8Array, signature: string | undefined, key: KeyObject): boolean {
  if (signature === undefined || signature === "" || signature.length > SIGNATURE_MAX || !BASE64.test(signature)) return false;
  try {
    return verify("sha256", body, { key, dsaEncoding: "der" }, Buffer.from(signature, "base64"));
  } catch {
    return false;
  }
}
