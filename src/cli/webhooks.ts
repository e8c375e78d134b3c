import { bool, CliError, commandLine, pageParams, query } from "./keys-api.ts";
import { table } from "./table.ts";

// `keyplane webhooks ...`: the calling key's webhooks against a running server (docs/webhooks.md).
// Tables for people, `-o json` for scripts. The signing secret is shown once, by `create`.
export const WEBHOOKS_USAGE = `usage: keyplane webhooks <command> [arguments] [-o table|json]

commands:
  list
  create URL [--events TYPE,...] [--description TEXT]
  get ID
  update ID [--url URL] [--events TYPE,...] [--active true|false] [--description TEXT]
  delete ID
  deliveries ID [--state pending|delivered|failed] [--limit N] [--before DELIVERY-ID]

ID is a webhook's numeric id. TYPE is key.created, key.updated, key.rotated, key.deleted,
key.expired, key.expiring, key.leaked or key.usage_exceeded (default: all of them).
environment: KEYPLANE_URL (default http://127.0.0.1:8080), KEYPLANE_TOKEN (required).`;

/** Webhooks read per request by `list`, which follows every page. */
const LIST_PAGE = 100;

const OPTIONS = {
  output: { type: "string", short: "o", default: "table" },
  events: { type: "string" },
  description: { type: "string" },
  url: { type: "string" },
  active: { type: "string" },
  state: { type: "string" },
  limit: { type: "string" },
  before: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

interface Webhook {
  id: number;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  secret?: string;
  createdAt: string;
}

interface Delivery {
  id: number;
  type: string;
  state: string;
  createdAt: string;
  attempts: { at: string; status: number | null; error: string | null }[];
  nextAttemptAt: string | null;
}

/** Runs one `keyplane webhooks` command; what it prints goes to `out`. Throws CliError for the one-line error. */
export async function webhooksCommand(argv: string[], env: { url: string; token: string | undefined }, out: (text: string) => void, fetchImpl?: typeof fetch): Promise<void> {
  const line = commandLine(argv, OPTIONS, WEBHOOKS_USAGE, env, out, fetchImpl);
  if (!line) return;
  const { o, command, arg, api, show } = line;
  const events = o.events === undefined ? {} : { events: o.events.split(",").map((t) => t.trim()).filter(Boolean) };
  const description = o.description === undefined ? {} : { description: o.description };

  switch (command) {
    case "list": {
      // Page after page, so that a list never stops at the first (docs/webhooks.md).
      const hooks = (await api.all(`/webhooks?limit=${LIST_PAGE}`)) as Webhook[];
      return show(hooks, () => webhookTable(hooks));
    }
    case "create": {
      if (!arg) throw new CliError("create needs the webhook's URL");
      const hook = (await api.request("POST", "/webhooks", { url: arg, ...events, ...description })) as Webhook;
      return show(hook, () => webhookTable([hook]) + `\nsecret (shown once; verify signatures with it): ${hook.secret}\n`);
    }
    case "get": {
      const hook = (await api.request("GET", `/webhooks/${webhookRef(arg)}`)) as Webhook;
      return show(hook, () => webhookTable([hook]));
    }
    case "update": {
      const body = {
        ...(o.url !== undefined && { url: o.url }),
        ...(o.active !== undefined && { active: bool(o.active, "--active") }),
        ...events,
        ...description,
      };
      const hook = (await api.request("PUT", `/webhooks/${webhookRef(arg)}`, body)) as Webhook;
      return show(hook, () => webhookTable([hook]));
    }
    case "delete": {
      await api.request("DELETE", `/webhooks/${webhookRef(arg)}`);
      return show({ deleted: Number(arg) }, () => `deleted webhook ${arg}\n`);
    }
    case "deliveries": {
      const list = (await api.request("GET", `/webhooks/${webhookRef(arg)}/deliveries${query({ state: o.state, ...pageParams(o) })}`)) as Delivery[];
      return show(list, () => deliveryTable(list));
    }
    default:
      throw new CliError(`unknown command "webhooks ${command}"\n\n${WEBHOOKS_USAGE}`);
  }
}

function webhookTable(hooks: Webhook[]): string {
  return table(
    ["ID", "URL", "ACTIVE", "EVENTS", "DESCRIPTION", "CREATED"],
    hooks.map((h) => [String(h.id), h.url, String(h.active), h.events.length === 8 ? "all" : h.events.join(","), h.description ?? "-", h.createdAt]),
  );
}

function deliveryTable(list: Delivery[]): string {
  return table(
    ["ID", "TYPE", "STATE", "ATTEMPTS", "LAST ATTEMPT", "NEXT ATTEMPT", "CREATED"],
    list.map((d) => {
      const last = d.attempts.at(-1);
      return [String(d.id), d.type, d.state, String(d.attempts.length), last ? `${last.at} ${last.status ?? last.error}` : "-", d.nextAttemptAt ?? "-", d.createdAt];
    }),
  );
}

function webhookRef(arg: string | undefined): string {
  if (!arg || !/^\d+$/.test(arg)) throw new CliError("this command needs a webhook's numeric ID");
  return arg;
}
