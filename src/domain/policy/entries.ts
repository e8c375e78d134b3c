import { LIST_ENTRIES, METHOD, type Parsed } from "./policy.ts";

// A policy's lists (`ips`, `referrers`, `methods`, `paths`): each non-empty when given, bounded, and
// every entry parsed once, the first bad one named by its index in the 400's message.

export function compileEntries<T>(field: string, entries: readonly string[], parse: (text: string) => Parsed<T>): Parsed<T[]> {
  if (entries.length < LIST_ENTRIES.min || entries.length > LIST_ENTRIES.max) {
    return { ok: false, reason: `${field}: must have ${LIST_ENTRIES.min} to ${LIST_ENTRIES.max} entries` };
  }
  const compiled: T[] = [];
  for (const [i, entry] of entries.entries()) {
    const parsed = parse(entry);
    if (!parsed.ok) return { ok: false, reason: `${field}[${i}]: ${parsed.reason}` };
    compiled.push(parsed.value);
  }
  return { ok: true, value: compiled };
}

export function parseMethod(text: string): Parsed<string> {
  return METHOD.test(text) ? { ok: true, value: text } : { ok: false, reason: "must be an upper-case HTTP method (GET, POST, ...)" };
}

export function compileMethods(field: string, methods: readonly string[]): Parsed<ReadonlySet<string>> {
  const parsed = compileEntries(field, methods, parseMethod);
  return parsed.ok ? { ok: true, value: new Set(parsed.value) } : parsed;
}

/** Why a number is not a whole number within its bounds, or undefined when it is. */
export function integerProblem(field: string, value: number, bounds: { min: number; max: number }): string | undefined {
  if (Number.isInteger(value) && value >= bounds.min && value <= bounds.max) return undefined;
  return `${field}: must be a whole number from ${bounds.min} to ${bounds.max}`;
}
