import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import supertest from "supertest";
import type { TestService } from "./service.ts";

// GitHub's side of the secret scanning partner program, for the leak suites: signing key pairs of the
// test's own (ECDSA P-256), served as GitHub's key list by a local HTTP server that counts how often
// keyplane fetches it, and reports signed as GitHub signs them (docs/leaks.md).

export interface SigningKey {
  id: string;
  privateKey: KeyObject;
  pem: string;
}

export function signingKey(id: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { id, privateKey, pem: publicKey.export({ type: "spki", format: "pem" }) as string };
}

/** GitHub's signature header: base64 of the DER ECDSA signature over the body's bytes. */
export function signature(body: string | Buffer, key: SigningKey): string {
  return sign("sha256", Buffer.from(body), { key: key.privateKey, dsaEncoding: "der" }).toString("base64");
}

export interface KeyListServer {
  url: string;
  /** How many times the list was fetched. */
  fetches(): number;
  /** The keys it lists from now on. */
  publish(keys: SigningKey[]): void;
  /** Whether it answers 500 from now on, as GitHub's API would when it is down. */
  failing(fails: boolean): void;
  close(): Promise<void>;
}

export async function keyListServer(keys: SigningKey[]): Promise<KeyListServer> {
  let listed = keys;
  let fetches = 0;
  let fails = false;
  const server: Server = createServer((_req, res) => {
    fetches++;
    if (fails) return void res.writeHead(500, { "Content-Type": "application/json" }).end('{"message":"Server Error"}');
    const body = JSON.stringify({ public_keys: listed.map((k, i) => ({ key_identifier: k.id, key: k.pem, is_current: i === 0 })) });
    res.writeHead(200, { "Content-Type": "application/json" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/meta/public_keys/secret_scanning`,
    fetches: () => fetches,
    publish: (next) => void (listed = next),
    failing: (next) => void (fails = next),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface GithubEntry {
  token: unknown;
  type?: unknown;
  url?: unknown;
  source?: unknown;
}

/** POST /leaks/github with `body` (JSON text) signed by `key`; `headers` replace or (undefined) remove GitHub's. */
export function githubReport(svc: TestService, body: string, key: SigningKey, headers: Record<string, string | undefined> = {}) {
  const sent: Record<string, string | undefined> = {
    "Content-Type": "application/json",
    "Github-Public-Key-Identifier": key.id,
    "Github-Public-Key-Signature": signature(body, key),
    ...headers,
  };
  let req = supertest(svc.app).post("/leaks/github");
  for (const [name, value] of Object.entries(sent)) if (value !== undefined) req = req.set(name, value);
  return req.send(body);
}

/** GitHub's report of these entries, each with GitHub's fields unless given. */
export function githubEntries(...tokens: (string | GithubEntry)[]): string {
  return JSON.stringify(tokens.map((t) => (typeof t === "string"
    ? { token: t, type: "keyplane_api_key", url: "https://github.com/octocat/hello/blob/main/.env", source: "content" }
    : t)));
}
