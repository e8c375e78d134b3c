// @ts-check
// The shared pieces every room uses: the REST API (this file), elements, dialogs, notices, formats and
// words, the session, secrets shown once, the pager. They use nothing outside shared/.
/* global fetch */
import { token } from "./session.js";
import { inWords, UNREACHABLE } from "./words.js";

// The REST API, as any client uses it (docs/api.md): the signed-in key as a bearer token on every
// request, paths that name keys by their numeric id (never by keyId: that is the token), JSON both
// ways. Only this origin is ever asked (the CSP's connect-src says so too), and no cookie goes along.

/**
 * What a person is told when something is refused, by the API or by the console before it asks: its
 * message is written for them. Any other error is the console's own fault, and is not shown as it is.
 */
export class Refused extends Error {
  /**
   * @param {string} message what went wrong, in words for a person
   * @param {{ status?: number, signedOut?: boolean }} [detail]
   */
  constructor(message, { status, signedOut = false } = {}) {
    super(message);
    this.name = "Refused";
    /** The answer's status, for the code that decides what to do next; never shown. */
    this.status = status;
    /** The key is not accepted (any more): the console signs out. */
    this.signedOut = signedOut;
  }
}

/**
 * @typedef {object} Answer
 * @property {any} body the parsed JSON, null for an answer without a body
 * @property {string | null} next the next page's path (a Link rel="next"), when there is one
 */

/**
 * @param {"GET" | "POST" | "PUT" | "DELETE"} method
 * @param {string} path a path on this origin, starting with one "/"
 * @param {unknown} [body]
 * @param {string | null} [bearer] the token to send; by default the signed-in key
 * @returns {Promise<Answer>}
 */
export async function call(method, path, body, bearer = token()) {
  if (!isOwnPath(path)) throw new Error(`not a path of this origin: ${path}`);
  if (!bearer) throw new Refused(inWords({ status: 401, message: undefined, retryAfter: undefined, requestId: null }), { status: 401, signedOut: true });
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${bearer}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", cache: "no-store", redirect: "error", referrerPolicy: "no-referrer",
    });
  } catch {
    throw new Refused(UNREACHABLE);
  }
  const text = await response.text().catch(() => "");
  const json = parse(text);
  if (!response.ok) {
    const retry = Number(response.headers.get("Retry-After"));
    const message = json && typeof json.message === "string" ? json.message : undefined;
    const words = inWords({
      status: response.status, message, retryAfter: Number.isInteger(retry) && retry > 0 ? retry : undefined,
      requestId: response.headers.get("X-Request-Id"),
    });
    throw new Refused(words, { status: response.status, signedOut: response.status === 401 });
  }
  return { body: json, next: nextPage(response.headers.get("Link")) };
}

/** @param {string} text */
function parse(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The path of `Link: <...>; rel="next"`, kept only when it is a path of this origin.
 * @param {string | null} link
 */
function nextPage(link) {
  const match = link?.match(/<([^>]*)>\s*;\s*rel="?next"?/);
  return match && isOwnPath(match[1] ?? "") ? /** @type {string} */ (match[1]) : null;
}

/** @param {string} path */
function isOwnPath(path) {
  return path.startsWith("/") && !path.startsWith("//") && !path.includes("\\");
}

/**
 * A key's path on /keys, which reaches every key the signed-in key may manage, by its numeric id.
 * @param {number} id
 * @param {string} [rest] what follows the key ("/rotate", "/events", "/credits")
 */
export function keyPath(id, rest = "") {
  return `/keys/${encodeURIComponent(String(id))}${rest}`;
}
