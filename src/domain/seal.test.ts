import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSealer, parseMasterKey } from "./seal.ts";
import { newToken, tokenHash } from "./keys/token.ts";

describe("sealed tokens", () => {
  const sealer = createSealer(randomBytes(32));

  it("open to the token they sealed, and hold no plain text", () => {
    const token = newToken();
    const sealed = sealer.seal(token, tokenHash(token));
    expect(sealed.toString("latin1")).not.toContain(token);
    expect(sealer.open(sealed, tokenHash(token))).toBe(token);
  });

  it("do not open under another master key", () => {
    const token = newToken();
    const sealed = sealer.seal(token, tokenHash(token));
    expect(() => createSealer(randomBytes(32)).open(sealed, tokenHash(token))).toThrow();
  });

  it("do not open on another key's row (the hash is bound)", () => {
    const token = newToken();
    const sealed = sealer.seal(token, tokenHash(token));
    expect(() => sealer.open(sealed, tokenHash(newToken()))).toThrow();
  });

  it("never share an IV, across the draws of IVs too, and each still opens after later draws", () => {
    const token = newToken();
    const seals = Array.from({ length: 5_000 }, () => sealer.seal(token, tokenHash(token)));
    expect(new Set(seals.map((sealed) => sealed.subarray(1, 13).toString("hex"))).size).toBe(seals.length);
    for (const sealed of seals) expect(sealer.open(sealed, tokenHash(token))).toBe(token);
  });

  it("do not open when tampered with", () => {
    const token = newToken();
    const sealed = sealer.seal(token, tokenHash(token));
    sealed[sealed.length - 1]! ^= 1;
    expect(() => sealer.open(sealed, tokenHash(token))).toThrow();
  });
});

describe("parseMasterKey", () => {
  const key = randomBytes(32);
  it("reads 64 hex characters", () => expect(parseMasterKey(key.toString("hex")).equals(key)).toBe(true));
  it("reads base64", () => expect(parseMasterKey(key.toString("base64")).equals(key)).toBe(true));
  it.each(["", "abc", randomBytes(16).toString("hex"), randomBytes(31).toString("base64")])("refuses %j", (text) => {
    expect(() => parseMasterKey(text)).toThrow(/32 bytes/);
  });
});
