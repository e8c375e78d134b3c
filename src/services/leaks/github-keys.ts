import type { KeyObject } from "node:crypto";
import type { Logger } from "pino";
import { AppError, errorFields, unauthorized } from "../../domain/errors.ts";
import { parseSigningKeys, signatureValid } from "../../domain/leaks/leak-signature.ts";

// GitHub's keys that sign secret scanning reports (docs/leaks.md), read from the list GitHub publishes
// and kept. An identifier not known yet has the list fetched again, but never more than once a minute,
// so reports with made-up identifiers cannot turn keyplane into a stream of requests to GitHub.

export const GITHUB_KEYS_URL = "https://api.github.com/meta/public_keys/secret_scanning";
/** The least time between two fetches of the list. */
export const KEYS_REFETCH_MS = 60_000;
/** How long one fetch may take: GitHub retries a report that got no answer. */
const FETCH_TIMEOUT_MS = 10_000;

export interface GithubKeysOptions {
  /** Where the list is (KEYPLANE_GITHUB_KEYS_URL). */
  url: string;
  clock: () => Date;
  log: Logger;
  /** How the list is fetched: the global fetch unless a test gives its own. */
  fetch?: typeof globalThis.fetch;
}

export class GithubKeys {
  readonly #options: GithubKeysOptions;
  #keys: ReadonlyMap<string, KeyObject> = new Map();
  /** When the last fetch began, in ms; undefined before the first. */
  #fetchedAt: number | undefined;
  /** Whether the last fetch failed: an unknown identifier is then not known to be nobody's. */
  #failed = false;
  #fetching: Promise<void> | undefined;

  constructor(options: GithubKeysOptions) {
    this.#options = options;
  }

  /**
   * Checks a report's signature: 401 for a missing or bad one or an identifier GitHub does not list;
   * 503 when the identifier is unknown and the list could not be read.
   */
  async verify(body: Uint8Array, identifier: string | undefined, signature: string | undefined): Promise<void> {
    if (identifier === undefined || identifier === "" || identifier.length > 256 || signature === undefined) {
      throw unauthorized("A report from GitHub is signed: Github-Public-Key-Identifier and Github-Public-Key-Signature are required.");
    }
    const key = await this.find(identifier);
    if (!key) throw unauthorized("Github-Public-Key-Identifier names no key GitHub publishes for secret scanning.");
    if (!signatureValid(body, signature, key)) throw unauthorized("Github-Public-Key-Signature is not GitHub's signature of this body.");
  }

  /** The key of this identifier, fetching the list again when it is not known and the last fetch is a minute old. */
  async find(identifier: string): Promise<KeyObject | undefined> {
    const known = this.#keys.get(identifier);
    if (known) return known;
    const now = this.#options.clock().getTime();
    if (this.#fetching) await this.#fetching;
    else if (this.#fetchedAt === undefined || now - this.#fetchedAt >= KEYS_REFETCH_MS) {
      this.#fetchedAt = now;
      this.#fetching = this.#fetch().finally(() => (this.#fetching = undefined));
      await this.#fetching;
    }
    const key = this.#keys.get(identifier);
    if (!key && this.#failed) throw new AppError("unavailable", "GitHub's secret scanning keys could not be read; try again shortly.");
    return key;
  }

  async #fetch(): Promise<void> {
    const { url, log } = this.#options;
    const fetch = this.#options.fetch ?? globalThis.fetch;
    try {
      const res = await fetch(url, { headers: { Accept: "application/json" }, redirect: "follow", signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`${url} answered ${res.status}`);
      const keys = parseSigningKeys(await res.json());
      if (keys.size === 0) throw new Error(`${url} lists no P-256 key`);
      this.#keys = keys;
      this.#failed = false;
      log.info({ keys: [...keys.keys()] }, "read GitHub's secret scanning keys");
    } catch (error) {
      // The keys read before stay: a list that cannot be read now takes nothing away.
      this.#failed = true;
      log.warn({ err: errorFields(error) }, "could not read GitHub's secret scanning keys");
    }
  }
}
