// The scope keywords of a platform path (docs/api.md, "Verification"): `customers` (also spelled
// `tenants`), `domains`, `applications`, `subscribers`, each followed by an entity's identifier, in the
// order the scope grammar allows. Upstreams that route without regard to case serve `/Domains/x` as
// `/domains/x`, so keyplane reads a keyword in any letter case as its canonical lower-case spelling,
// and `tenants` as `customers`, wherever the grammar has a keyword: the path's identifiers and the rest
// of it are left as they are (a customer may be named `tenants`; `/calls/Tenants` names no scope).

export type Keyword = "customers" | "domains" | "applications" | "subscribers";
export type Entity = "customer" | "domain" | "application" | "subscriber";

const KEYWORDS: ReadonlyMap<string, Keyword> = new Map([
  ["customers", "customers"],
  ["tenants", "customers"],
  ["domains", "domains"],
  ["applications", "applications"],
  ["subscribers", "subscribers"],
]);
const LENGTHS: ReadonlySet<number> = new Set([...KEYWORDS.keys()].map((k) => k.length));

/** The entity each keyword names. */
export const ENTITY_OF: Readonly<Record<Keyword, Entity>> = { customers: "customer", domains: "domain", applications: "application", subscribers: "subscriber" };

/** What may follow each entity in a scope prefix. */
export const NEXT: Readonly<Record<"start" | Entity, readonly Keyword[]>> = {
  start: ["customers", "domains", "applications", "subscribers"],
  customer: ["domains"],
  domain: ["applications", "subscribers"],
  application: [],
  subscriber: [],
};

/**
 * The keyword a segment spells in any letter case, or undefined. Besides ASCII, the four characters
 * whose simple case mapping is an ASCII letter count (`ı` and `İ` as i, `ſ` as s, the Kelvin sign as
 * k): Java's equalsIgnoreCase and .NET's OrdinalIgnoreCase, which case-insensitive routers use, read
 * `/domaıns/x` as `/domains/x`.
 */
export function keywordOf(segment: string): Keyword | undefined {
  const exact = KEYWORDS.get(segment);
  if (exact !== undefined || !LENGTHS.has(segment.length)) return exact;
  return KEYWORDS.get(segment.replace(/[\u0130\u0131]/g, "i").replace(/\u017f/g, "s").replace(/\u212a/g, "k").toLowerCase());
}

/**
 * The segments with each keyword of the scope prefix in its canonical spelling: the segments
 * themselves (no copy) when they are canonical already, as nearly every path is. `identifies(i)` says
 * whether segment i can stand for an entity, so that the prefix goes on after it.
 */
export function canonicalKeywords<T>(segments: readonly T[], spelled: (segment: T) => string | undefined, canonical: (keyword: Keyword) => T, identifies: (i: number) => boolean): readonly T[] {
  let out: T[] | undefined;
  let at: keyof typeof NEXT = "start";
  for (let i = 0; i < segments.length; i += 2) {
    const text = spelled(segments[i]!);
    const keyword = text === undefined ? undefined : keywordOf(text);
    if (keyword === undefined || !NEXT[at].includes(keyword)) break;
    if (keyword !== text) (out ??= segments.slice())[i] = canonical(keyword);
    if (!identifies(i + 1)) break;
    at = ENTITY_OF[keyword];
  }
  return out ?? segments;
}

/** A path's segments (one reading) with the keywords of its scope prefix canonical. */
export function canonicalPath(segments: readonly string[]): readonly string[] {
  return canonicalKeywords(segments, (s) => s, (k) => k, (i) => i < segments.length && segments[i] !== "");
}
