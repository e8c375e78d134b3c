import { readFile } from "node:fs/promises";
import { CliError, type ApiClient } from "./keys-api.ts";
import { table } from "./table.ts";

// `keyplane keys policy` and `keyplane keys credits`: a key's own policy and balance (docs/api.md,
// "Key policy"), shown as a table of its rules, or set from a JSON file.

interface Policy {
  restrictions?: Record<string, string[]>;
  ratelimits?: { name: string; limit: number; windowSeconds: number; methods?: string[]; paths?: string[] }[];
  credits?: { remaining: number; refill?: { amount: number; interval: string; day?: number } };
}
interface Credits {
  remaining: number;
  nextRefillAt: string | null;
}

export interface PolicyOptions {
  set?: string | undefined;
  add?: string | undefined;
  clear?: boolean | undefined;
}

type Show = (value: unknown, asTable: () => string) => void;

/** Reads a policy from a file, or from standard input for `-`. */
export type ReadInput = (file: string) => Promise<string>;

export const readInput: ReadInput = async (file) => {
  if (file !== "-") return readFile(file, "utf8");
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
};

/** Shows a key's own policy; with --set FILE|- replaces it, with --clear removes it. */
export async function policyCommand(api: ApiClient, key: string, o: PolicyOptions, show: Show, read: ReadInput): Promise<void> {
  if (o.add !== undefined) throw new CliError("policy takes --set FILE|- or --clear, not --add");
  if (o.set !== undefined && o.clear) throw new CliError("give --set or --clear, not both");
  let shown: { policy: Policy | null };
  if (o.set === undefined && !o.clear) shown = (await api.request("GET", `/keys/${key}`)) as { policy: Policy | null };
  else shown = (await api.request("PUT", `/keys/${key}`, { policy: o.clear ? null : await policyFrom(o.set!, read) })) as { policy: Policy | null };
  show(shown.policy, () => policyTable(shown.policy));
}

/** Shows a key's own balance; with --set N sets it, with --add N adds to it (--add=-N takes). */
export async function creditsCommand(api: ApiClient, key: string, o: PolicyOptions, show: Show): Promise<void> {
  if (o.clear) throw new CliError("credits takes --set N or --add N, not --clear");
  if (o.set !== undefined && o.add !== undefined) throw new CliError("give --set or --add, not both");
  const body =
    o.set !== undefined ? { remaining: whole(o.set, "--set", false) }
    : o.add !== undefined ? { add: whole(o.add, "--add", true) }
    : undefined;
  const credits = (await api.request(body ? "PUT" : "GET", `/keys/${key}/credits`, body)) as Credits;
  show(credits, () => table(["REMAINING", "NEXT REFILL"], [[String(credits.remaining), credits.nextRefillAt ?? "-"]]));
}

async function policyFrom(file: string, read: ReadInput): Promise<unknown> {
  let text: string;
  try {
    text = await read(file);
  } catch (error) {
    throw new CliError(`cannot read ${file === "-" ? "standard input" : file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${file === "-" ? "standard input" : file} is not JSON: a policy is a JSON object (docs/api.md, "Key policy")`);
  }
}

function whole(value: string, flag: string, signed: boolean): number {
  if (!(signed ? /^-?\d+$/ : /^\d+$/).test(value)) throw new CliError(`${flag} must be a whole number${signed ? "" : " of 0 or more"}, not "${value}"`);
  return Number(value);
}

/** One row per rule: restrictions by kind, each rate limit, the credits. */
export function policyTable(policy: Policy | null): string {
  if (policy === null) return "no policy of its own\n";
  const rows: string[][] = [];
  for (const [kind, entries] of Object.entries(policy.restrictions ?? {})) rows.push(["restriction", kind, entries.join(", ")]);
  for (const l of policy.ratelimits ?? []) {
    const only = [l.methods?.join(","), l.paths?.join(", ")].filter(Boolean).join(" ");
    rows.push(["rate limit", l.name, `${l.limit} per ${l.windowSeconds}s${only ? ` (${only})` : ""}`]);
  }
  if (policy.credits) {
    const { remaining, refill } = policy.credits;
    const when = refill && (refill.interval === "monthly" ? `monthly on day ${refill.day ?? 1}` : refill.interval);
    rows.push(["credits", "remaining", `${remaining}${refill ? `, set to ${refill.amount} ${when}` : ", no refill"}`]);
  }
  return rows.length ? table(["PART", "NAME", "RULE"], rows) : "an empty policy\n";
}
