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
  let text = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) text += ",";
    const value = values[i]!;
    if (value === null) text += "NULL";
    else if (typeof value === "string") text += quoted(value);
    else if (value instanceof Date) text += value.toISOString();
    else text += String(value);
  }
  return text + "}";
}

const ESCAPED = /["\\]/;

function quoted(value: string): string {
  return ESCAPED.test(value) ? `"${value.replace(/["\\]/g, "\\$&")}"` : `"${value}"`;
}
