import { createCipheriv, createDecipheriv, createSecretKey, randomFillSync } from "node:crypto";

// Tokens are stored sealed with AES-256-GCM under the master key, so the API can show keyIds again
// while the database alone never yields a usable token. The look-up hash is bound as additional
// data: a sealed copy moved onto another row fails to open.
const SEAL_FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** IVs drawn from the system's random source at a time: one draw each cost more than the sealing itself (an import seals a million). */
const IVS_PER_DRAW = 1024;

export interface Sealer {
  seal(token: string, hash: Buffer): Buffer;
  open(sealed: Buffer, hash: Buffer): string;
}

export function createSealer(masterKeyBytes: Buffer): Sealer {
  if (masterKeyBytes.length !== 32) throw new Error("the master key must be 32 bytes");
  // A KeyObject is prepared once; a raw Buffer would be prepared again on every call (lists open many).
  const masterKey = createSecretKey(masterKeyBytes);
  const ivs = Buffer.alloc(IV_BYTES * IVS_PER_DRAW);
  let nextIv = ivs.length;
  return {
    seal(token, hash) {
      if (nextIv === ivs.length) {
        randomFillSync(ivs);
        nextIv = 0;
      }
      // Each IV is used once: random 96-bit IVs, as GCM under one key asks (NIST SP 800-38D, 8.2.2).
      const iv = ivs.subarray(nextIv, (nextIv += IV_BYTES));
      const cipher = createCipheriv("aes-256-gcm", masterKey, iv).setAAD(hash);
      const body = Buffer.concat([cipher.update(token, "latin1"), cipher.final()]);
      return Buffer.concat([Buffer.of(SEAL_FORMAT), iv, cipher.getAuthTag(), body]);
    },
    open(sealed, hash) {
      if (sealed[0] !== SEAL_FORMAT) throw new Error(`unknown sealed token version ${sealed[0]}`);
      const iv = sealed.subarray(1, 1 + IV_BYTES);
      const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
      const decipher = createDecipheriv("aes-256-gcm", masterKey, iv).setAAD(hash).setAuthTag(tag);
      return decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES), undefined, "latin1") + decipher.final("latin1");
    },
  };
}

/** Reads a master key given as 64 hex characters or as base64 of 32 bytes. */
export function parseMasterKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new Error("KEYPLANE_MASTER_KEY must be 32 bytes, as 64 hex characters or base64");
  return key;
}
