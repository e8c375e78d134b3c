import type { Parsed } from "./policy.ts";

// Referrer patterns for a policy's `referrers` (docs/api.md, "Key policy"): a URL where `*` matches any
// run of characters, the empty run included, and every other character only itself. The whole
// referrer must match. No regular expression is built from the pattern: nothing in it can act as
// regex syntax, and a match costs at most the referrer's length times the pattern's, whatever the
// number of stars (a regex of several `.*` can backtrack for a long time).

/** The literal runs between the stars: one more than there are stars. */
export interface ReferrerPattern {
  readonly parts: readonly string[];
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

export function parseReferrerPattern(text: string): Parsed<ReferrerPattern> {
  // A Referer is always an absolute URL, so a pattern that could never match one is refused.
  if (!(text.startsWith("*") || SCHEME.test(text))) return { ok: false, reason: "must be a URL (https://...), or start with *" };
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\s\x00-\x1f\x7f]/.test(text)) return { ok: false, reason: "must not contain spaces or control characters" };
  return { ok: true, value: { parts: text.split("*") } };
}

export function matchesReferrer(pattern: ReferrerPattern, referrer: string): boolean {
  const { parts } = pattern;
  const first = parts[0]!;
  if (parts.length === 1) return referrer === first;
  const last = parts[parts.length - 1]!;
  const end = referrer.length - last.length;
  if (end < first.length || !referrer.startsWith(first) || !referrer.endsWith(last)) return false;
  // Taking each middle part at its first place leaves the most room for the ones after it.
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const found = referrer.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}
