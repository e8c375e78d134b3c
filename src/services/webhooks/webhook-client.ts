import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { ATTEMPT_TIMEOUT_MS } from "../../domain/webhooks/webhook-schedule.ts";
import { checkWebhookUrl, refusedAmong } from "../../domain/webhooks/webhook-url.ts";
import type { WebhookSettings } from "./webhook-settings.ts";

// One attempt to deliver a webhook message, over node:http(s) (docs/webhooks.md): a POST that counts
// as answered with its status line; redirects are not followed (a 3xx is an answer like any other
// that is not 2xx). The URL is checked again as at creation, and a name is resolved here, its
// addresses checked, and the connection made to the checked address itself (the request's `lookup`),
// so a name that resolves elsewhere by the time of the attempt (DNS rebinding) cannot lead it astray.

export interface WebhookCall {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What an attempt came to: a response's status (and Retry-After), or why there was none. */
export type CallOutcome = { status: number; retryAfter: string | undefined } | { error: string };

export interface WebhookClient {
  send(call: WebhookCall): Promise<CallOutcome>;
  /** Ends the kept-alive connections. */
  close(): void;
}

export interface WebhookClientOptions {
  /** How long an attempt may take before it fails (15 s). */
  timeoutMs?: number;
  /** Connections kept per receiver: as many as the sender makes attempts at once. */
  maxSockets?: number;
}

class Refused extends Error {}

/** A lookup that resolves with `settings.resolve` and fails for a refused address, unless private ones are allowed. */
function checkedLookup(settings: WebhookSettings): LookupFunction {
  return (hostname, options, callback) => {
    settings.resolve(hostname).then(
      (all) => {
        const refused = settings.allowPrivate ? undefined : refusedAmong(all);
        if (refused) throw new Refused(`refused: ${hostname} resolves to a ${refused.why} address (${refused.address})`);
        const family = (a: string) => (a.includes(":") ? 6 : 4);
        const wanted = all.filter((a) => !options.family || family(a) === options.family);
        if (wanted.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" });
        if (options.all) callback(null, wanted.map((address) => ({ address, family: family(address) })));
        else callback(null, wanted[0]!, family(wanted[0]!));
      },
    ).catch((error: unknown) => callback(error as NodeJS.ErrnoException, "", 0));
  };
}

/** Why a request failed, for a person reading the delivery's attempts. */
function describe(error: unknown): string {
  if (error instanceof Refused) return error.message;
  const code = (error as { code?: string }).code;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found";
    case "ECONNRESET":
      return "connection reset";
    default:
      return code ? `${code}: ${(error as Error).message}` : (error as Error).message;
  }
}

/** A URL as requests are made to it, worked out once: its check, and the request's options. */
type Target = { refused: string } | { https: boolean; options: { protocol: string; hostname: string; port: string; path: string } };

function targetOf(text: string, settings: WebhookSettings): Target {
  const check = checkWebhookUrl(text, settings);
  if (!check.ok) return { refused: `refused: ${check.reason}` };
  const { protocol, hostname, port, pathname, search } = check.url;
  // An IPv6 literal's brackets are the URL's, not the address's.
  return { https: protocol === "https:", options: { protocol, hostname: hostname.replace(/^\[(.*)\]$/, "$1"), port, path: pathname + search } };
}

export function httpWebhookClient(settings: WebhookSettings, { timeoutMs = ATTEMPT_TIMEOUT_MS, maxSockets = 64 }: WebhookClientOptions = {}): WebhookClient {
  const agents = { http: new HttpAgent({ keepAlive: true, maxSockets }), https: new HttpsAgent({ keepAlive: true, maxSockets }) };
  const lookup = checkedLookup(settings);
  const targets = new Map<string, Target>();
  return {
    send(call) {
      let target = targets.get(call.url);
      if (target === undefined) {
        if (targets.size > 1_000) targets.clear();
        targets.set(call.url, (target = targetOf(call.url, settings)));
      }
      if ("refused" in target) return Promise.resolve({ error: target.refused });
      const { https, options } = target;
      const request = https ? httpsRequest : httpRequest;
      return new Promise<CallOutcome>((resolve) => {
        let settled = false;
        const settle = (outcome: CallOutcome) => {
          if (!settled) resolve(outcome);
          settled = true;
        };
        const req = request({
          ...options,
          method: "POST",
          agent: https ? agents.https : agents.http,
          lookup,
          headers: { ...call.headers, "content-length": String(Buffer.byteLength(call.body)), "user-agent": "keyplane-webhooks" },
        });
        // The whole exchange, the response's body included, ends within the time-out.
        const timer = setTimeout(() => {
          settle({ error: `timed out after ${timeoutMs / 1000} s` });
          req.destroy();
        }, timeoutMs);
        req.on("response", (res: IncomingMessage) => {
          const retryAfter = res.headers["retry-after"];
          settle({ status: res.statusCode ?? 0, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
          res.on("end", () => clearTimeout(timer)).on("error", () => clearTimeout(timer)).resume();
        });
        req.on("error", (error) => {
          clearTimeout(timer);
          settle({ error: describe(error) });
        });
        req.end(call.body);
      });
    },
    close() {
      for (const agent of Object.values(agents)) agent.destroy();
    },
  };
}
