import type { ScopeRefs } from "./scope.ts";

// A platform path as the upstream will see it, and the scope it names (docs/api.md, "Verification"):
// percent-decoded segment by segment (an encoded slash stays inside its segment), dot segments removed
// as RFC 3986 5.2.4 does, and refused when they would climb above the root or an escape is malformed.
// No spelling of a path names anything its plain form would not.

/** The path's segments, decoded and with dot segments resolved; undefined when it cannot be judged. */
export function normalizePath(path: string): string[] | undefined {
  if (!path.startsWith("/")) return undefined;
  const out: string[] = [];
  const query = path.indexOf("?");
  const raw = (query === -1 ? path : path.slice(0, query)).split("/");
  for (let i = 1; i < raw.length; i++) {
    const part = raw[i]!;
    let segment = part;
    if (part.includes("%")) {
      try {
        segment = decodeURIComponent(part);
      } catch {
        return undefined;
      }
    }
    const last = i === raw.length - 1;
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

const COLLECTIONS = { customers: "customer", tenants: "customer", domains: "domain", applications: "application", subscribers: "subscriber" } as const;
type Collection = keyof typeof COLLECTIONS;
/** What may follow each entity in a scope prefix. */
const NEXT: Record<"start" | "customer" | "domain" | "application" | "subscriber", readonly Collection[]> = {
  start: ["customers", "tenants", "domains", "applications", "subscribers"],
  customer: ["domains"],
  domain: ["applications", "subscribers"],
  application: [],
  subscriber: [],
};

/** The scope prefix of normalized segments: the longest run of collection/identifier pairs the grammar allows. */
export function platformTarget(segments: readonly string[]): PlatformTarget {
  const refs: ScopeRefs = {};
  let at: keyof typeof NEXT = "start";
  let i = 0;
  while (i + 1 < segments.length) {
    const collection = segments[i] as Collection;
    const id = segments[i + 1]!;
    if (!NEXT[at].includes(collection) || id === "") break;
    at = COLLECTIONS[collection];
    refs[at] = id;
    i += 2;
  }
  const rest = segments.slice(i);
  return { refs, atApplication: at === "application" && (rest.length === 0 || (rest.length === 1 && rest[0] === "")) };
}
