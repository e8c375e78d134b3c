import { bool, CliError, commandLine, integer, pageParams, query, type OptionValues } from "./keys-api.ts";
import { analyticsCommand } from "./keys-analytics.ts";
import { creditsCommand, policyCommand, readInput, type ReadInput } from "./keys-policy.ts";
import { exportCommand, importCommand } from "./keys-transfer.ts";
import { table } from "./table.ts";

// `keyplane keys ...`: the everyday key tasks against a running server (docs/operations.md, "The
// command line"). Tables for people, `-o json` for scripts. A table never shows a whole token, except
// the new one that `create` and `rotate` exist to hand out.
export const KEYS_USAGE = `usage: keyplane keys <command> [arguments] [-o table|json]

commands:
  list   [--path BASE] [--name NAME] [--type TYPE] [--active true|false]
  get    KEY
  create NAME [--path BASE] [--inactive] [--expires-in SECONDS | --expires-at TIME]
  update KEY [--name NAME] [--active true|false] [--expires-at TIME|never]
  rotate KEY [--grace SECONDS] [--expires-in SECONDS | --expires-at TIME]
  delete KEY
  events [KEY] [--action ACTION] [--limit N] [--before EVENT-ID]
  policy KEY [--set FILE|- | --clear]      the key's own policy; --set reads JSON from FILE or stdin
  credits KEY [--set N | --add N]          the key's own balance; --add=-N takes N
  analytics [KEY] [--interval minute|hour|day] [--from TIME] [--to TIME] [--top N]
                                           verdicts by outcome over time (default the last 25 hours):
                                           the key's, or without KEY its scope's and its most used keys
  import FILE [--create-directory]        keys from another platform, one JSON line each (admin token)
  export [--customer C [--domain D]]      every live key, one JSON line each, to stdout (admin token)

KEY is a key's numeric id or its keyId. BASE is a key path of the API, such as
/customers/acme/domains/sip.acme.example/keys (default /keys: the caller's own scope).
environment: KEYPLANE_URL (default http://127.0.0.1:8080), KEYPLANE_TOKEN (required).`;

const OPTIONS = {
  output: { type: "string", short: "o", default: "table" },
  path: { type: "string", default: "/keys" },
  name: { type: "string" },
  type: { type: "string" },
  active: { type: "string" },
  inactive: { type: "boolean" },
  "expires-in": { type: "string" },
  "expires-at": { type: "string" },
  grace: { type: "string" },
  action: { type: "string" },
  limit: { type: "string" },
  before: { type: "string" },
  set: { type: "string" },
  add: { type: "string" },
  clear: { type: "boolean" },
  interval: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  top: { type: "string" },
  customer: { type: "string" },
  domain: { type: "string" },
  "create-directory": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Options = OptionValues<typeof OPTIONS>;

export interface KeysEnvironment {
  url: string;
  token: string | undefined;
}

/** Runs one `keyplane keys` command; what it prints goes to `out`. Throws CliError for the one-line error. */
export async function keysCommand(
  argv: string[], env: KeysEnvironment, out: (text: string) => void, fetchImpl?: typeof fetch, read: ReadInput = readInput,
): Promise<void> {
  const line = commandLine(argv, OPTIONS, KEYS_USAGE, env, out, fetchImpl);
  if (!line) return;
  const { o, command, arg, api, show } = line;

  switch (command) {
    case "list": {
      const keys = (await api.request("GET", basePath(o.path) + listQuery(o))) as Key[];
      return show(keys, () => keyTable(keys));
    }
    case "get": {
      const key = (await api.request("GET", `/keys/${keyRef(arg)}`)) as Key;
      return show(key, () => keyTable([key]));
    }
    case "create": {
      if (!arg) throw new CliError("create needs the new key's NAME");
      const body = { name: arg, ...(o.inactive && { active: false }), ...expiry(o) };
      const key = (await api.request("POST", basePath(o.path), body)) as Key;
      return show(key, () => keyTable([key], { wholeToken: true }));
    }
    case "update": {
      const body = {
        ...(o.name !== undefined && { name: o.name }),
        ...(o.active !== undefined && { active: bool(o.active, "--active") }),
        ...(o["expires-at"] !== undefined && { expiresAt: o["expires-at"] === "never" ? null : o["expires-at"] }),
      };
      const key = (await api.request("PUT", `/keys/${keyRef(arg)}`, body)) as Key;
      return show(key, () => keyTable([key]));
    }
    case "rotate": {
      const body = { ...(o.grace !== undefined && { gracePeriodSeconds: integer(o.grace, "--grace") }), ...expiry(o) };
      const key = (await api.request("POST", `/keys/${keyRef(arg)}/rotate`, body)) as Key;
      return show(key, () => keyTable([key], { wholeToken: true }));
    }
    case "delete": {
      await api.request("DELETE", `/keys/${keyRef(arg)}`);
      return show({ deleted: arg }, () => `deleted key ${arg}\n`);
    }
    case "events": {
      const path = arg === undefined ? "/events" : `/keys/${keyRef(arg)}/events`;
      const events = (await api.request("GET", path + eventsQuery(o))) as KeyEvent[];
      return show(events, () => eventTable(events));
    }
    case "policy":
      return policyCommand(api, keyRef(arg), o, show, read);
    case "credits":
      return creditsCommand(api, keyRef(arg), o, show);
    case "analytics":
      return analyticsCommand(api, arg === undefined ? undefined : keyRef(arg), o, show);
    case "import":
      if (!arg) throw new CliError("import needs the FILE to import");
      return importCommand(env, arg, o["create-directory"] === true, o.output === "json", out, undefined, fetchImpl);
    case "export":
      return exportCommand(env, o.customer, o.domain, out, undefined, fetchImpl);
    default:
      throw new CliError(`unknown command "keys ${command}"\n\n${KEYS_USAGE}`);
  }
}

interface Key {
  id: number;
  keyId: string;
  name: string;
  type: string;
  active: boolean;
  tenant?: { name: string };
  domain?: { domain: string };
  application?: { name: string };
  subscriber?: { msisdn: string };
  user?: { email: string };
  expiresAt?: string | null;
  lastUsedAt?: string | null;
  createdAt: string;
}

interface KeyEvent {
  id: number;
  at: string;
  action: string;
  key: { id: number; name: string };
  actor: { type: string; name?: string; id?: number; apiKey?: string };
  /** Each field's [before, after]; a `leaked` event's `leak` is where the token was found instead. */
  changes?: Record<string, unknown>;
}

function keyTable(keys: Key[], { wholeToken = false } = {}): string {
  return table(
    ["ID", "NAME", "TYPE", "ACTIVE", "SCOPE", "KEY", "EXPIRES", "LAST USED", "CREATED"],
    keys.map((k) => [
      String(k.id), k.name, k.type, String(k.active), scopeOf(k),
      wholeToken ? k.keyId : hint(k.keyId), k.expiresAt ?? "-", k.lastUsedAt ?? "-", k.createdAt,
    ]),
  );
}

function eventTable(events: KeyEvent[]): string {
  return table(
    ["ID", "AT", "ACTION", "KEY", "ACTOR", "CHANGES"],
    events.map((e) => [String(e.id), e.at, e.action, `${e.key.id} ${e.key.name}`, actorOf(e.actor), changesOf(e.changes)]),
  );
}

const scopeOf = (k: Key) => [k.tenant?.name, k.domain?.domain, k.application?.name, k.subscriber?.msisdn, k.user?.email].filter(Boolean).join("/");
const hint = (keyId: string) => `${keyId.slice(0, 2)}…${keyId.slice(-4)}`;
const actorOf = (a: KeyEvent["actor"]) => (a.type === "key" ? `key ${a.id} ${a.name}` : a.type === "operator" ? `operator ${a.apiKey}` : a.type);
const changesOf = (changes: KeyEvent["changes"]) =>
  Object.entries(changes ?? {}).map(([field, change]) =>
    Array.isArray(change) ? `${field}: ${JSON.stringify(change[0])} -> ${JSON.stringify(change[1])}` : `${field}: ${JSON.stringify(change)}`).join(", ") || "-";

/** A key's id or keyId, as one path segment. */
function keyRef(arg: string | undefined): string {
  if (!arg) throw new CliError("this command needs a KEY: a key's numeric id or its keyId");
  return encodeURIComponent(arg);
}

function basePath(path: string | undefined): string {
  if (!path?.startsWith("/") || !/\/(api)?keys$/.test(path)) throw new CliError(`--path must be a key path of the API ending in /keys, such as /customers/acme/keys`);
  return path;
}

function listQuery(o: Options): string {
  return query({ name: o.name, type: o.type, active: o.active === undefined ? undefined : bool(o.active, "--active") });
}

function eventsQuery(o: Options): string {
  return query({ action: o.action, ...pageParams(o) });
}

function expiry(o: Options): Record<string, unknown> {
  if (o["expires-in"] !== undefined && o["expires-at"] !== undefined) throw new CliError("give --expires-in or --expires-at, not both");
  if (o["expires-in"] !== undefined) return { expiresIn: integer(o["expires-in"], "--expires-in") };
  if (o["expires-at"] !== undefined) return { expiresAt: o["expires-at"] };
  return {};
}
