import { CliError, query, type ApiClient } from "./keys-api.ts";
import { table } from "./table.ts";

// `keyplane keys analytics [KEY]`: a key's verdicts over time by outcome, or, without KEY, the caller's
// scope's with its most used keys (docs/api.md, "Analytics"): a row per bucket, for people; `-o json`
// the API's answer.

const OUTCOMES = ["valid", "restricted", "rateLimited", "usageExceeded", "forbidden", "disabled", "expired"] as const;
const HEADER = ["VALID", "RESTRICTED", "RATE LIMITED", "USAGE EXCEEDED", "FORBIDDEN", "DISABLED", "EXPIRED", "CREDITS"];

type Counts = Record<(typeof OUTCOMES)[number] | "credits", number>;
interface Analytics {
  interval: string;
  buckets: ({ start: string } & Counts)[];
  top?: ({ id: number; name: string; requests: number } & Counts)[];
}

export interface AnalyticsOptions {
  interval?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  top?: string | undefined;
}

type Show = (value: unknown, asTable: () => string) => void;

/** Shows a key's buckets (KEY given) or its caller's scope's and top keys. */
export async function analyticsCommand(api: ApiClient, key: string | undefined, o: AnalyticsOptions, show: Show): Promise<void> {
  if (key !== undefined && o.top !== undefined) throw new CliError("--top lists a scope's keys: give it without KEY");
  const path = key === undefined ? "/analytics" : `/keys/${key}/analytics`;
  const answer = (await api.request("GET", path + query({ interval: o.interval, from: o.from, to: o.to, top: o.top }))) as Analytics;
  show(answer, () => analyticsTable(answer));
}

const cells = (c: Counts) => [...OUTCOMES.map((o) => String(c[o])), String(c.credits)];

export function analyticsTable(a: Analytics): string {
  const buckets = table(["START", ...HEADER], a.buckets.map((b) => [b.start, ...cells(b)]));
  if (a.top === undefined) return buckets;
  const top = a.top.length ? table(["ID", "NAME", "REQUESTS", ...HEADER], a.top.map((k) => [String(k.id), k.name, String(k.requests), ...cells(k)])) : "no key was used\n";
  return `${buckets}\nmost used keys:\n${top}`;
}
