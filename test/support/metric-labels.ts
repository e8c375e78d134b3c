import { expect } from "vitest";
import type { Metrics } from "../../src/services/operations/metrics.ts";
import type { Tenant } from "./world.ts";

// The scan the suites that send every kind of request end with (docs/operations.md, "Metrics"): no
// label value holds a token, one of the names the suite used (customers, domains, applications,
// subscribers, keys, users), or a raw path. A route label is a pattern: literal words and :parameters.
const TOKEN = /XI[0-9A-F]{32}/i;
const ROUTE_PATTERN = /^(\/|(\/([a-z][a-z.-]*|:[a-zA-Z]+))+|unmatched)$/;

/** What is wrong with the label values of an exposition, one line each; empty when nothing is. */
export function labelProblems(exposition: string, names: readonly string[]): string[] {
  const banned = new Set(names.map((n) => n.toLowerCase()));
  const problems: string[] = [];
  for (const line of exposition.split("\n")) {
    if (line.startsWith("#")) continue;
    for (const [, label, value] of line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      const v = value!;
      if (TOKEN.test(v)) problems.push(`${label} holds a token: ${line}`);
      if (v.split(/[/\s]/).some((part) => banned.has(part.toLowerCase()))) problems.push(`${label} holds a name: ${line}`);
      if (label === "route" && !ROUTE_PATTERN.test(v)) problems.push(`route is not a pattern: ${line}`);
    }
  }
  return problems;
}

export async function expectCleanLabels(metrics: Metrics, names: readonly string[]): Promise<void> {
  const text = await metrics.text();
  expect(text).toContain("keyplane_http_requests_total{");
  expect(labelProblems(text, names)).toEqual([]);
}

/** The names a world (test/support/world.ts) gives its entities and keys. */
export function namesOf(tenants: readonly Tenant[]): string[] {
  return tenants.flatMap((t) => [t.name, ...t.domains, t.application.name, t.subscriber.msisdn, `owner@${t.name}.example`, `ops@${t.name}.example`, "root", "probe"]);
}
