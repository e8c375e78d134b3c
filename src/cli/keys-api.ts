import { parseArgs, type ParseArgsOptionsConfig } from "node:util";

// The REST API as the `keyplane keys` and `keyplane webhooks` commands see it: a base URL, a bearer
// token, the flags both read and the queries they make, and one error type whose message is the one
// line the command prints. No token is ever part of a message.
export class CliError extends Error {}

/** A command line's option values, as parseArgs reads them with `T`. */
export type OptionValues<T extends ParseArgsOptionsConfig> = ReturnType<typeof parseArgs<{ options: T; allowPositionals: true }>>["values"];

/** One `keyplane <noun> <command> [argument]` line, read and checked, with the client to call the API. */
export interface CommandLine<T extends ParseArgsOptionsConfig> {
  o: OptionValues<T>;
  command: string;
  arg: string | undefined;
  api: ApiClient;
  /** Prints `value` as JSON with `-o json`, else the table `asTable` makes. */
  show(value: unknown, asTable: () => string): void;
}

/**
 * Reads `argv` with `options` (which hold `output`, `-o`, and `help`, `-h`): undefined once the usage is
 * printed (asked for, or no command given); else the command and its one argument. A line parseArgs
 * refuses, a second argument, an unknown -o or no KEYPLANE_TOKEN is a CliError.
 */
export function commandLine<T extends ParseArgsOptionsConfig>(
  argv: string[], options: T, usage: string, env: { url: string; token: string | undefined }, out: (text: string) => void, fetchImpl?: typeof fetch,
): CommandLine<T> | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n\n${usage}`);
  }
  const o = parsed.values as OptionValues<T>;
  const { help, output } = o as { help?: boolean; output?: string };
  const [command, arg, ...extra] = parsed.positionals;
  if (help || command === undefined) return void out(usage + "\n");
  if (output !== "table" && output !== "json") throw new CliError(`-o must be table or json, not "${output}"`);
  if (extra.length) throw new CliError(`unexpected argument "${extra[0]}"`);
  if (!env.token) throw new CliError("KEYPLANE_TOKEN is not set: export an API key to call the API with");
  const show = (value: unknown, asTable: () => string) => out(output === "json" ? JSON.stringify(value, null, 2) + "\n" : asTable());
  return { o, command, arg, api: apiClient(env.url, env.token, fetchImpl), show };
}

/** A flag's true or false. */
export function bool(value: string, flag: string): boolean {
  if (value === "true" || value === "false") return value === "true";
  throw new CliError(`${flag} must be true or false, not "${value}"`);
}

/** A flag's whole number. */
export function integer(value: string, flag: string): number {
  if (!/^\d+$/.test(value)) throw new CliError(`${flag} must be a whole number, not "${value}"`);
  return Number(value);
}

/** A list's page, as --limit and --before give it. */
export function pageParams(o: { limit?: string; before?: string }): { limit?: number; before?: number } {
  return {
    ...(o.limit !== undefined && { limit: integer(o.limit, "--limit") }),
    ...(o.before !== undefined && { before: integer(o.before, "--before") }),
  };
}

/** "?name=billing&limit=5": the parameters given, in their order; "" for none. */
export function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) q.set(name, String(value));
  return q.size ? `?${q}` : "";
}

export interface ApiClient {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
  /** Every item of a paged list: GET `path`, then each page its `Link: <...>; rel="next"` names, on this server only. */
  all(path: string): Promise<unknown[]>;
}

/** The path of a `Link: <...>; rel="next"`, if any. */
function nextPath(link: string | null): string | undefined {
  return link?.match(/<([^>]*)>\s*;\s*rel="?next"?/)?.[1];
}

export function apiClient(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch): ApiClient {
  const base = baseUrl.replace(/\/+$/, "");
  const client: ApiClient = {
    request: async (method, path, body) => (await send(method, path, body)).json,
    async all(path) {
      const items: unknown[] = [];
      const seen = new Set<string>();
      for (let next: string | undefined = path; next !== undefined;) {
        // The token goes to this server alone: a next page elsewhere is refused, not followed.
        if (!next.startsWith("/") || next.startsWith("//") || next.includes("\\")) throw new CliError(`the server's next page is not on ${base}: ${next}`);
        if (seen.has(next)) throw new CliError(`the server's next page is the one before: ${next}`);
        seen.add(next);
        const page = await send("GET", next);
        if (!Array.isArray(page.json)) throw new CliError(`GET ${next}: the server's answer is not a list`);
        items.push(...(page.json as unknown[]));
        next = nextPath(page.link);
      }
      return items;
    },
  };
  async function send(method: string, path: string, body?: unknown): Promise<{ json: unknown; link: string | null }> {
    let res: Response;
    try {
      res = await fetchImpl(base + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, ...(body !== undefined && { "Content-Type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      const { cause } = error as { cause?: { code?: string; message?: string } };
      const why = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new CliError(`cannot reach ${base}: ${why}`);
    }
    const text = await res.text();
    const json = text ? parseJson(text) : undefined;
    if (!res.ok) {
      const problem = json as { error?: string; message?: string } | undefined;
      throw new CliError(problem?.message ? `${problem.message} (${res.status} ${problem.error})` : `${method} ${path}: HTTP ${res.status}`);
    }
    return { json, link: res.headers.get("link") };
  }
  return client;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError("the server's answer is not JSON: is KEYPLANE_URL a keyplane server?");
  }
}
