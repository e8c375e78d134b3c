import { lookup } from "node:dns/promises";
import type { UrlRules } from "../../domain/webhooks/webhook-url.ts";

// Where webhooks may send (docs/webhooks.md, "Addresses"), and how names are resolved to judge it:
// the same rules at creation and at each attempt, after resolution (webhook-client.ts).

/** A host name's addresses, every one (IPv4 and IPv6). */
export type Resolver = (host: string) => Promise<string[]>;

export interface WebhookSettings extends UrlRules {
  resolve: Resolver;
}

/** The system's resolver (getaddrinfo: /etc/hosts too, as a connection would resolve the name). */
export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
