import { generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseSigningKeys, signatureValid } from "./leak-signature.ts";

// GitHub's published example (docs.github.com, "Secret scanning partner program", validation samples):
// the key 90a421..., the payload and its signature, as GitHub documents them.
const PUBLISHED = {
  id: "90a421169f0a406205f1563a953312f0be898d3c7b6c06b681aa86a874555f4a",
  pem: [
    "-----BEGIN PUBLIC KEY-----",
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9MJJHnMfn2+H4xL4YaPDA4RpJqUq",
    "kCmRCBnYERxZanmcpzQSXs1X/AljlKkbJ8qpVIW4clayyef9gWhFbNHWAA==",
    "-----END PUBLIC KEY-----",
  ].join("\n"),
  payload: Buffer.from('[{"token":"some_token","type":"some_type","url":"some_url"}]'),
  signature: "MEUCIQDKZokqnCjrRtw0tni+2Ltvl/uiMJ1EGumEsp1BsNr32AIgQY1YXD2nlj+XNfGK4rBfkMJ1JDOQcYXxa2sY8FNkrKc=",
};
const list = (...keys: unknown[]) => ({ public_keys: keys });

describe("parseSigningKeys", () => {
  it("reads GitHub's list by key_identifier", () => {
    const keys = parseSigningKeys(list({ key_identifier: PUBLISHED.id, key: PUBLISHED.pem, is_current: true }));
    expect([...keys.keys()]).toEqual([PUBLISHED.id]);
  });

  it("leaves out what could not have signed, and keeps the rest", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" });
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ type: "spki", format: "pem" });
    const keys = parseSigningKeys(list(
      { key_identifier: "rsa", key: rsa }, { key_identifier: "p384", key: p384 }, { key_identifier: "garbage", key: "-----BEGIN PUBLIC KEY-----\nnope" },
      { key_identifier: 7, key: PUBLISHED.pem }, { key_identifier: "", key: PUBLISHED.pem }, null, "text",
      { key_identifier: PUBLISHED.id, key: PUBLISHED.pem },
    ));
    expect([...keys.keys()]).toEqual([PUBLISHED.id]);
  });

  it.each([null, undefined, "text", 42, {}, { public_keys: "no" }, []])("is empty for a list that is none: %j", (value) => {
    expect(parseSigningKeys(value).size).toBe(0);
  });
});

describe("signatureValid", () => {
  const key = parseSigningKeys(list({ key_identifier: PUBLISHED.id, key: PUBLISHED.pem })).get(PUBLISHED.id)!;

  it("accepts GitHub's published example", () => expect(signatureValid(PUBLISHED.payload, PUBLISHED.signature, key)).toBe(true));

  it("refuses the example's payload changed by one byte", () => {
    const tampered = Buffer.from(PUBLISHED.payload);
    tampered[12] = tampered[12]! ^ 1;
    expect(signatureValid(tampered, PUBLISHED.signature, key)).toBe(false);
  });

  it("refuses a signature by another key", () => {
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const signature = sign("sha256", PUBLISHED.payload, { key: other.privateKey, dsaEncoding: "der" }).toString("base64");
    expect(signatureValid(PUBLISHED.payload, signature, key)).toBe(false);
    expect(signatureValid(PUBLISHED.payload, signature, other.publicKey)).toBe(true);
  });

  it.each([
    ["none", undefined],
    ["an empty header", ""],
    ["text that is not base64", "not base64 at all!"],
    ["base64 with its padding cut", PUBLISHED.signature.slice(0, -1)],
    ["base64url instead of base64", PUBLISHED.signature.replaceAll("+", "-").replaceAll("/", "_")],
    ["base64 of a signature that is not DER", Buffer.alloc(64, 7).toString("base64")],
    ["the signature twice, as a repeated header joins them", `${PUBLISHED.signature}, ${PUBLISHED.signature}`],
    ["a signature far too long", "A".repeat(4096)],
  ])("refuses %s", (_name, signature) => expect(signatureValid(PUBLISHED.payload, signature, key)).toBe(false));
});
