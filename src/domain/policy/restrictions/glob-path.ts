import { canonicalKeywords } from "../../scope/scope-keywords.ts";
import type { Parsed } from "../policy.ts";

// Path patterns for a policy's `paths` (docs/api.md, "Key policy"): platform paths where a `*` segment
// matches exactly one segment and a `**` segment any number of them, none included. They are matched
// segment by segment against a request's path as an upstream reads it (percent-decoded, dot segments
// removed, the query dropped: a PathReading), so no spelling of a path matches what its plain form
// would not. A pattern's own segments are percent-decoded too, and its scope keywords read as a path's
// are (`/Tenants/*/calls` is `/customers/*/calls`, domain/scope/scope-keywords.ts). A trailing slash names the
// same resource as the path without it, as it does for an application's configuration: `/calls/` and
// `/calls` match the same patterns. Restrictions match exactly; rate limits ignore letter case
// (foldedPathGlob, foldedReading): a request that an upstream routing without regard to case serves as
// the limit's path is counted.

export type GlobSegment = { kind: "literal"; text: string } | { kind: "one" } | { kind: "any" };
export type PathGlob = readonly GlobSegment[];

export function parsePathGlob(text: string): Parsed<PathGlob> {
  if (!text.startsWith("/")) return { ok: false, reason: "must be a path starting with /" };
  if (/[?#]/.test(text)) return { ok: false, reason: "must not carry a query or fragment" };
  const raw = text.split("/").slice(1);
  if (raw[raw.length - 1] === "") raw.pop();
  const glob: GlobSegment[] = [];
  for (const part of raw) {
    if (part === "**") {
      if (glob[glob.length - 1]?.kind !== "any") glob.push({ kind: "any" }); // `**/**` is `**`
    } else if (part === "*") {
      glob.push({ kind: "one" });
    } else if (part.includes("*")) {
      return { ok: false, reason: "must use * and ** only as whole segments (/*/ or /**/)" };
    } else {
      const literal = decoded(part);
      if (literal === undefined) return { ok: false, reason: "must not contain a malformed percent-escape" };
      if (literal === "." || literal === "..") return { ok: false, reason: "must not contain . or .. segments" };
      glob.push({ kind: "literal", text: literal });
    }
  }
  const spelled = (g: GlobSegment) => (g.kind === "literal" ? g.text : undefined);
  const identifies = (i: number) => {
    const g = glob[i];
    return g?.kind === "one" || (g?.kind === "literal" && g.text !== "");
  };
  return { ok: true, value: canonicalKeywords<GlobSegment>(glob, spelled, (text) => ({ kind: "literal", text }), identifies) };
}

/** The pattern with its literals in lower case (foldedReading's), to match folded readings. */
export function foldedPathGlob(glob: PathGlob): PathGlob {
  return glob.map((g) => (g.kind === "literal" ? { kind: "literal", text: folded(g.text) } : g));
}

/**
 * A reading with ASCII letters in lower case, and the four characters that case-insensitive routers
 * take for ASCII letters (scope-keywords.ts) as those letters; itself (no copy) when none is there.
 */
export function foldedReading(segments: readonly string[]): readonly string[] {
  return segments.some((s) => FOLDS.test(s)) ? segments.map(folded) : segments;
}

const FOLDS = /[A-Z\u0130\u0131\u017f\u212a]/;
const FOLD: Readonly<Record<string, string>> = { "\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k" };

function folded(text: string): string {
  return FOLDS.test(text) ? text.replace(/[A-Z\u0130\u0131\u017f\u212a]/g, (c) => FOLD[c] ?? c.toLowerCase()) : text;
}

/** Whether a reading of a path (its decoded segments, dot segments removed) matches the pattern. */
export function matchesPathGlob(glob: PathGlob, segments: readonly string[]): boolean {
  const count = segments[segments.length - 1] === "" ? segments.length - 1 : segments.length;
  // Wildcard matching with backtracking to the last `**` only: at most segments x pattern steps.
  let g = 0;
  let s = 0;
  let anyAt = -1;
  let anyFrom = 0;
  while (s < count) {
    const at = glob[g];
    if (at !== undefined && (at.kind === "one" || (at.kind === "literal" && at.text === segments[s]))) {
      g++;
      s++;
    } else if (at?.kind === "any") {
      anyAt = g++;
      anyFrom = s;
    } else if (anyAt !== -1) {
      g = anyAt + 1;
      s = ++anyFrom;
    } else {
      return false;
    }
  }
  while (glob[g]?.kind === "any") g++;
  return g === glob.length;
}

export function matchesAnyPath(globs: readonly PathGlob[], segments: readonly string[]): boolean {
  return globs.some((glob) => matchesPathGlob(glob, segments));
}

function decoded(part: string): string | undefined {
  if (!part.includes("%")) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}
