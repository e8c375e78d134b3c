// How a path segment names a directory entity (docs/api.md, "Directory"): digits are an id, a UUID is a uuid,
// anything else a name; `self` is the caller's own.
export type Identifier =
  | { kind: "self" }
  | { kind: "id"; id: number }
  | { kind: "uuid"; uuid: string }
  | { kind: "name"; name: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_ID = 2 ** 31 - 1;

export function parseIdentifier(segment: string): Identifier {
  if (segment === "self") return { kind: "self" };
  if (/^[0-9]{1,10}$/.test(segment) && Number(segment) <= MAX_ID) return { kind: "id", id: Number(segment) };
  if (UUID.test(segment)) return { kind: "uuid", uuid: segment.toLowerCase() };
  return { kind: "name", name: segment };
}

/** Parses a numeric id, or undefined when the text is not one that the store could hold. */
export function parseId(text: string): number | undefined {
  const ident = parseIdentifier(text);
  return ident.kind === "id" ? ident.id : undefined;
}

/** An identifier that names an entity by itself. */
export type Named = Exclude<Identifier, { kind: "self" }>;

/** Parses a path segment; `self` becomes the id `own` of the caller's entity (undefined if it has none). */
export function parseWithSelf(segment: string, own: number | null): Named | undefined {
  const ident = parseIdentifier(segment);
  if (ident.kind !== "self") return ident;
  return own === null ? undefined : { kind: "id", id: own };
}

/** Parses a segment where nobody is `self` (the admin API, ApiKey specs): `self` is a name like any other, which no entity may have. */
export function parseNamed(segment: string): Named {
  const ident = parseIdentifier(segment);
  return ident.kind === "self" ? { kind: "name", name: segment } : ident;
}
