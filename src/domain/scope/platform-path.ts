import type { ScopeRefs } from "./scope.ts";
import { canonicalPath, ENTITY_OF, NEXT, type Keyword } from "./scope-keywords.ts";

// A platform path as the upstream will see it, and the scope it names (docs/api.md, "Verification").
// Upstreams read some spellings differently, so keyplane takes each reading one may take, and a path
// passes only when every reading does:
// - an encoded slash or backslash (`%2F`, `%5C`, either case) kept inside its segment, or read as a
//   separator, as a literal backslash may be too (Envoy's UNESCAPE_AND_FORWARD, an application that
//   splits its decoded path);
// - empty segments (`a//b`) kept, or merged before or after dot segments are removed (nginx, Envoy);
// - `;` parameters kept in their segment, or removed from every segment before dot segments go
//   (Tomcat and Spring read `/domains;v=1/x` as `/domains/x`, and `..;x` as `..`).
// Every reading is percent-decoded once, has its dot segments removed as RFC 3986 5.2.4 does, and its
// scope keywords in canonical form (scope-keywords.ts: `/Tenants/x` is `/customers/x`). A reading that
// climbs above the root refuses the path, as does a malformed escape or one that decoding leaves behind
// (`%252F`). A path with no `%`, `\`, `;` or `//` has one reading, worked out as cheaply as ever. No
// spelling of a path names anything its plain form would not.

/** What upstreams may read differently: an escape, a backslash, a parameter, an empty segment. */
const SPELLED = /[%\\;]|\/\//;

/** Each reading of the path: segments decoded, dot segments removed; undefined when it cannot be judged. */
export function pathReadings(path: string): (readonly string[])[] | undefined {
  if (!path.startsWith("/")) return undefined;
  const query = path.indexOf("?");
  const raw = query === -1 ? path : path.slice(0, query);
  if (!SPELLED.test(raw)) {
    const plain = withoutDots(raw.split("/"), 1);
    return plain && [canonicalPath(plain)];
  }
  const once = decodedSegments(raw);
  if (!once) return undefined;
  const readings: (readonly string[])[] = [];
  for (const spelling of spellings(once)) {
    for (const dotted of dotReadings(spelling)) {
      if (!dotted) return undefined;
      const reading = canonicalPath(dotted);
      if (!readings.some((kept) => kept.length === reading.length && kept.every((segment, i) => segment === reading[i]))) readings.push(reading);
    }
  }
  return readings;
}

/**
 * The spellings an upstream may take of the decoded segments: an encoded slash or backslash kept or a
 * separator; `;` parameters kept or removed, before the separators are read (as Tomcat removes them
 * from the undecoded path) or after (an application that splits its decoded path, then removes them).
 */
function spellings(once: string[]): string[][] {
  const separated = withSeparated(once);
  if (!once.some((segment) => segment.includes(";"))) return separated;
  return [...separated, ...withSeparated(once.map(withoutParameters)), ...separated.slice(1).map((s) => s.map(withoutParameters))];
}

/** A segment without its `;` parameters: `..;x` is `..`, `;x` is empty. */
function withoutParameters(segment: string): string {
  const at = segment.indexOf(";");
  return at === -1 ? segment : segment.slice(0, at);
}

/** An escape, left in a segment once decoded: a second decoding would change the path. */
const ESCAPE = /%[0-9a-f]{2}/i;

/**
 * The path's segments, each percent-decoded once (an encoded `/` stays inside its segment); undefined
 * for a malformed escape, or one that decoding leaves (`%252F`, `%2564omains`): what an upstream that
 * decodes twice reads there is not what one that decodes once does, in ways no one reading sums up.
 */
function decodedSegments(raw: string): string[] | undefined {
  const parts = raw.split("/");
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    if (!part.includes("%")) {
      out.push(part);
      continue;
    }
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      return undefined;
    }
    if (ESCAPE.test(segment)) return undefined;
    out.push(segment);
  }
  return out;
}

/** The segments, and where one holds a `/` or `\`, the segments with each read as a separator. */
function withSeparated(segments: string[]): string[][] {
  if (!segments.some((segment) => segment.includes("/") || segment.includes("\\"))) return [segments];
  return [segments, segments.flatMap((segment) => segment.split(/[/\\]/))];
}

/**
 * The segments with dot segments removed, and where empty segments (`a//b`) lie before the last, also
 * with them merged first, and merged after: nginx merges before, Envoy after. Undefined for a climb.
 */
function dotReadings(segments: readonly string[]): (string[] | undefined)[] {
  const plain = withoutDots(segments);
  if (!segments.some((segment, i) => segment === "" && i < segments.length - 1)) return [plain];
  return [plain, withoutDots(merged(segments)), plain && merged(plain)];
}

/** Empty segments dropped, but a last one (the trailing `/`). */
function merged(segments: readonly string[]): string[] {
  return segments.filter((segment, i) => segment !== "" || i === segments.length - 1);
}

/** RFC 3986 5.2.4 on segments (from `start` on): undefined when `..` would climb above the root. */
function withoutDots(segments: readonly string[], start = 0): string[] | undefined {
  const out: string[] = [];
  for (let i = start; i < segments.length; i++) {
    const segment = segments[i]!;
    const last = i === segments.length - 1;
    if (segment === ".") {
      if (last) out.push("");
    } else if (segment === "..") {
      if (out.length === 0) return undefined;
      out.pop();
      if (last) out.push("");
    } else {
      out.push(segment);
    }
  }
  return out;
}

export interface PlatformTarget {
  /** The entities the path names, outermost first; none: the caller's own scope. */
  refs: ScopeRefs;
  /** The path ends at an application (its configuration), also with a trailing "/". */
  atApplication: boolean;
}

/**
 * What each reading of the path names, without repeats; undefined when the path cannot be judged, or
 * when a reading names an entity by a segment that keeps a `;`: no entity is named so, and an upstream
 * that keeps parameters would not find the one the other readings name.
 */
export function pathTargets(path: string): PlatformTarget[] | undefined {
  const readings = pathReadings(path);
  if (!readings) return undefined;
  if (readings.length === 1) {
    const target = platformTarget(readings[0]!);
    return namesByParameters(target) ? undefined : [target];
  }
  const targets = new Map<string, PlatformTarget>();
  for (const reading of readings) {
    const target = platformTarget(reading);
    if (namesByParameters(target)) return undefined;
    const { customer, domain, application, subscriber } = target.refs;
    targets.set(JSON.stringify([customer, domain, application, subscriber, target.atApplication]), target);
  }
  return [...targets.values()];
}

function namesByParameters({ refs }: PlatformTarget): boolean {
  return !!(refs.customer?.includes(";") || refs.domain?.includes(";") || refs.application?.includes(";") || refs.subscriber?.includes(";"));
}

/** The scope prefix of a reading (canonical keywords): the longest run of keyword/identifier pairs the grammar allows. */
export function platformTarget(segments: readonly string[]): PlatformTarget {
  const refs: ScopeRefs = {};
  let at: keyof typeof NEXT = "start";
  let i = 0;
  while (i + 1 < segments.length) {
    const keyword = segments[i] as Keyword;
    const id = segments[i + 1]!;
    if (!NEXT[at].includes(keyword) || id === "") break;
    at = ENTITY_OF[keyword];
    refs[at] = id;
    i += 2;
  }
  const rest = segments.slice(i);
  return { refs, atApplication: at === "application" && (rest.length === 0 || (rest.length === 1 && rest[0] === "")) };
}
