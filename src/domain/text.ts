// The text keyplane takes wherever a request carries it (docs/api.md, "Text"): well-formed Unicode
// without NUL. JSON may escape an unpaired surrogate ("\ud800") that no UTF-8 can carry, so neither
// PostgreSQL nor a client reading the answer would get back what was sent; and PostgreSQL's text
// cannot hold NUL at all. Such text is refused (400) rather than stored altered.

/**
 * The rule as one pattern, for the request schemas and, through them, /openapi.json. Read with the `u`
 * flag (as JSON Schema's patterns are), `[^\uD800-\uDFFF]` takes a surrogate pair as the one character
 * it encodes and refuses a surrogate that stands alone.
 */
// eslint-disable-next-line no-control-regex -- refusing NUL is the point
export const TEXT = /^[^\x00\uD800-\uDFFF]*$/u;

export const TEXT_RULE = "must be well-formed Unicode text without NUL (no unpaired surrogate, no \\u0000)";

export function isText(s: string): boolean {
  return TEXT.test(s);
}

/** A text's length in characters: code points, as PostgreSQL's char_length and JSON Schema's maxLength count them. */
export function codePoints(s: string): number {
  let n = 0;
  // A string iterates by code point: a surrogate pair is one step, a lone surrogate one too.
  for (const _ of s) n++;
  return n;
}
