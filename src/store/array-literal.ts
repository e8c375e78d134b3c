// A statement's array parameter as PostgreSQL's text form of an array ("{1,NULL,\"a \\\"b\\\"\"}"),
// made by keyplane so that it can be made ahead of the statement: the driver makes it only as the
// statement is sent (docs/migration.md, "How it is written").

export type ArrayElement = string | number | boolean | Date | null;

/**
 * The array literal of `values`: every string quoted, `"` and `\` escaped within (so that an empty
 * string, "NULL", commas, braces and spaces stay themselves), numbers and booleans bare, dates in ISO
 * 8601 (UTC), null as NULL.
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  // Joined, not concatenated: a string built by `+=` is a tree of as many pieces until it is read,
  // and this one waits for its statement.
  return `{${values.map(element).join(",")}}`;
}

function element(value: ArrayElement): string {
  if (value === null) return "NULL";
  if (typeof value === "string") return quoted(value);
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

const ESCAPED = /["\\]/;

function quoted(value: string): string {
  return ESCAPED.test(value) ? `"${value.replace(/["\\]/g, "\\$&")}"` : `"${value}"`;
}
