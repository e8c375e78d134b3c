import { REFERRER_AUTHORITY } from "./entry-patterns.ts";
import type { Parsed } from "../policy.ts";

// Referrer patterns for a policy's `referrers` (docs/api.md, "Key policy"), matched part by part as the
// WHATWG URL parser (a browser's) reads both the pattern and the referrer, never as one string, so that
// no text in a query, fragment, path or user name can pass for the host:
// - the scheme exactly, http or https;
// - the host by labels, where a `*` label stands for one or more whole labels: `*.acme.example` is
//   `a.acme.example` and `a.b.acme.example`, never `acme.example` nor `evilacme.example`;
// - the port, the scheme's default when none is written;
// - the path, where `*` matches any run of characters (the empty run included), without building a
//   regular expression: a match costs at most the path's length times the pattern's.
// The referrer's query and fragment take no part. A referrer with user information (`user@`), or that
// is not an absolute http(s) URL, matches nothing; the pattern `*` alone matches every other referrer.

export type ReferrerPattern =
  | { readonly kind: "any" }
  | { readonly kind: "url"; readonly scheme: string; readonly host: readonly string[]; readonly port: string; readonly path: readonly string[] }
  /** A pattern stored under looser rules than these, which no longer compiles: it matches nothing. */
  | { readonly kind: "none" };

/** A referrer as its parts, read once per request. */
export interface Referrer {
  readonly scheme: string;
  readonly host: readonly string[];
  readonly port: string;
  readonly path: string;
}

// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const UNSPEAKABLE = /[\s\x00-\x1f\x7f]/;
const ABSOLUTE = /^https?:\/\//i;
const URL_RULE = "must be a URL of http or https (https://*.acme.example/*), or * for any";

export function parseReferrerPattern(text: string): Parsed<ReferrerPattern> {
  if (text === "*") return { ok: true, value: { kind: "any" } };
  if (!ABSOLUTE.test(text)) return { ok: false, reason: URL_RULE };
  if (UNSPEAKABLE.test(text)) return { ok: false, reason: "must not contain spaces or control characters" };
  if (userInfo(text)) return { ok: false, reason: "must not carry user information (user@): a referrer with it matches nothing" };
  if (/[?#]/.test(text)) return { ok: false, reason: "must not carry a query or fragment: a referrer's are not matched" };
  const written = authority(text);
  if (!REFERRER_AUTHORITY.test(written)) {
    const labels = written.replace(/:[^.\]]*$/, "").split(".");
    if (labels.some((label) => label.includes("*") && label !== "*")) {
      return { ok: false, reason: "must use * in the host only as whole labels (https://*.acme.example/), each standing for one or more" };
    }
    return { ok: false, reason: `${URL_RULE}: its host or port cannot be read (a host is DNS labels in ASCII, an IDN in its xn-- form, an IPv4 address or a [bracketed] IPv6 one; a port 0-65535)` };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: `${URL_RULE}: its host or port cannot be read` };
  }
  return { ok: true, value: { kind: "url", scheme: url.protocol, host: url.hostname.split("."), port: url.port, path: url.pathname.split("*") } };
}

/**
 * parseReferrerPattern for a policy already stored, perhaps under looser rules: what no longer
 * compiles matches nothing, so the restriction refuses rather than the whole policy failing open.
 */
export function parseStoredReferrerPattern(text: string): Parsed<ReferrerPattern> {
  const parsed = parseReferrerPattern(text);
  return parsed.ok ? parsed : { ok: true, value: { kind: "none" } };
}

/** The referrer's parts; undefined for one that can match nothing (not absolute http(s), user information). */
export function readReferrer(text: string): Referrer | undefined {
  if (!ABSOLUTE.test(text) || UNSPEAKABLE.test(text) || userInfo(text)) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.username !== "" || url.password !== "") return undefined;
  return { scheme: url.protocol, host: url.hostname.split("."), port: url.port, path: url.pathname };
}

/** The authority of an absolute URL: from its `//` up to the first `/`, `\`, `?` or `#`, as the URL parser ends it. */
function authority(text: string): string {
  const from = text.indexOf("//") + 2;
  const end = text.slice(from).search(/[/\\?#]/);
  return text.slice(from, end === -1 ? undefined : from + end);
}

function userInfo(text: string): boolean {
  return authority(text).includes("@");
}

export function matchesReferrer(pattern: ReferrerPattern, referrer: Referrer): boolean {
  if (pattern.kind !== "url") return pattern.kind === "any";
  return pattern.scheme === referrer.scheme && pattern.port === referrer.port && hostMatches(pattern.host, referrer.host) && pathMatches(pattern.path, referrer.path);
}

/** Labels against labels, a `*` taking one or more whole, non-empty labels. */
function hostMatches(pattern: readonly string[], host: readonly string[]): boolean {
  // Wildcard matching with backtracking to the last star only: at most host x pattern steps.
  let p = 0;
  let h = 0;
  let starAt = -1;
  let starTook = 0;
  while (h < host.length) {
    const label = pattern[p];
    if (label === "*" && host[h] !== "") {
      starAt = p++;
      starTook = ++h;
    } else if (label !== undefined && label !== "*" && label === host[h]) {
      p++;
      h++;
    } else if (starAt !== -1 && host[starTook] !== "") {
      p = starAt + 1;
      h = ++starTook;
    } else {
      return false;
    }
  }
  return p === pattern.length;
}

/** The path against the literal runs between the pattern's stars: one more run than there are stars. */
function pathMatches(parts: readonly string[], path: string): boolean {
  const first = parts[0]!;
  if (parts.length === 1) return path === first;
  const last = parts[parts.length - 1]!;
  const end = path.length - last.length;
  if (end < first.length || !path.startsWith(first) || !path.endsWith(last)) return false;
  // Taking each middle part at its first place leaves the most room for the ones after it.
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const found = path.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}
