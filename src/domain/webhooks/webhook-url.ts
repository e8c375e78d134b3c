import { parseAddress } from "../policy/restrictions/cidr.ts";
import { notGlobalText } from "./special-addresses.ts";

// Where webhooks may send (docs/webhooks.md, "Addresses"): https, or http where allowed; never, unless
// allowed, to an address that is not globally reachable (this machine, a private network, a block the
// IANA registries set apart: special-addresses.ts), so that a webhook cannot be made to reach what
// only keyplane can (server-side request forgery). The host is judged as the WHATWG URL
// parser leaves it, which is also what a request would connect to: decimal, octal and hexadecimal
// IPv4 spellings (http://2130706433/, http://0x7f.1/) are already dotted quads there, and an
// IPv4-mapped IPv6 address is judged as the IPv4 address it carries (policy/cidr.ts).

export interface UrlRules {
  /** KEYPLANE_WEBHOOK_ALLOW_HTTP: http as well as https. */
  allowHttp: boolean;
  /** KEYPLANE_WEBHOOK_ALLOW_PRIVATE: addresses that are not globally reachable too (loopback, private, link-local...). */
  allowPrivate: boolean;
}

export const WEBHOOK_URL_MAX = 2048;

/** Why a webhook may not reach an address (loopback, private, documentation...: special-addresses.ts), or undefined when it may. An address that is none is refused too. */
export const refusedAddress = notGlobalText;

/** A URL's host as an address when it is one (IPv6 without its brackets); undefined for a name. */
export function hostAddress(url: URL): string | undefined {
  const host = url.hostname;
  if (host.startsWith("[") && host.endsWith("]")) return host.slice(1, -1);
  return parseAddress(host) ? host : undefined;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Whether a webhook may have this URL, as far as the URL itself tells: its scheme and, for an address, the address. Names are resolved by the caller. */
export function checkWebhookUrl(text: string, rules: UrlRules): UrlCheck {
  if (text.length > WEBHOOK_URL_MAX) return { ok: false, reason: `url must be at most ${WEBHOOK_URL_MAX} characters` };
  // eslint-disable-next-line no-control-regex -- a parser would drop or encode them: what was given would not be what is called
  if (/[\x00-\x20\x7f]/.test(text)) return { ok: false, reason: "url must not hold spaces or control characters" };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "url must be an absolute URL" };
  }
  if (url.protocol !== "https:" && !(rules.allowHttp && url.protocol === "http:")) {
    return { ok: false, reason: rules.allowHttp ? "url must be http or https" : "url must be https (http is allowed only with KEYPLANE_WEBHOOK_ALLOW_HTTP=true)" };
  }
  if (url.username || url.password) return { ok: false, reason: "url must not carry a user name or password" };
  if (url.hostname === "") return { ok: false, reason: "url must name a host" };
  if (rules.allowPrivate) return { ok: true, url };
  const address = hostAddress(url);
  const refused = address !== undefined ? refusedAddress(address) : undefined;
  if (refused) return { ok: false, reason: `url's host is a ${refused} address (${address}), which webhooks may not reach` };
  return { ok: true, url };
}

/** The first of a name's addresses that a webhook may not reach, with why; undefined when it may reach them all. */
export function refusedAmong(addresses: readonly string[]): { address: string; why: string } | undefined {
  for (const address of addresses) {
    const why = refusedAddress(address);
    if (why) return { address, why };
  }
  return undefined;
}
