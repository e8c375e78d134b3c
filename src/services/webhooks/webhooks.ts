import { badRequest, conflict, notFound } from "../../domain/errors.ts";
import { mayManage, type Scope } from "../../domain/scope/scope.ts";
import { WEBHOOK_TYPES, WEBHOOKS_PER_SCOPE, type DeliveryState, type StoredWebhook, type Webhook, type WebhookDelivery, type WebhookType } from "../../domain/webhooks/webhook.ts";
import { newWebhookSecret } from "../../domain/webhooks/webhook-signature.ts";
import { checkWebhookUrl, hostAddress, refusedAmong } from "../../domain/webhooks/webhook-url.ts";
import { deliveryListByWebhook } from "../../store/webhooks/webhook-deliveries.ts";
import {
  webhookDelete, webhookFindById, webhookInsert, webhookListByScope, webhookLockScope, webhookNextId, webhookUpdate, type WebhookPage,
} from "../../store/webhooks/webhooks.ts";
import type { WebhooksNeeds } from "./needs.ts";

// Use cases of webhooks (docs/webhooks.md). `caller` is the scope of the key that asks, null for the
// admin: a key sees and manages the webhooks whose scope lies inside its own; any other is 404, the
// same answer as for none. The admin's are every webhook, and may have no scope (every key's).

/** A webhook's secret is sealed as tokens are, bound to its id as tokens are bound to their hash. */
const secretBinding = (id: number) => Buffer.from(`webhook:${id}`);

/** A webhook's signing secret, opened. */
export function webhookSecret(ctx: Pick<WebhooksNeeds, "sealer">, id: number, sealed: Buffer): string {
  return ctx.sealer.open(sealed, secretBinding(id));
}

export interface WebhookRequest {
  url: string;
  events?: WebhookType[] | undefined;
  description?: string | null | undefined;
}

/** Refuses (400) a URL a webhook may not have: its scheme, its host, or an address its name resolves to. */
export async function requireReachable(ctx: Pick<WebhooksNeeds, "webhooks">, text: string): Promise<void> {
  const check = checkWebhookUrl(text, ctx.webhooks);
  if (!check.ok) throw badRequest(`Invalid request body: ${check.reason}.`);
  if (ctx.webhooks.allowPrivate || hostAddress(check.url) !== undefined) return;
  let addresses: string[];
  try {
    addresses = await ctx.webhooks.resolve(check.url.hostname);
  } catch {
    // A name that does not resolve yet may resolve by the first message; each attempt checks again.
    return;
  }
  const refused = refusedAmong(addresses);
  if (refused) throw badRequest(`Invalid request body: url's host ${check.url.hostname} resolves to a ${refused.why} address (${refused.address}), which webhooks may not reach.`);
}

/** A new webhook at `scope`, with its secret: the one time the secret is shown. 409 when the scope holds WEBHOOKS_PER_SCOPE already. */
export async function createWebhook(ctx: WebhooksNeeds, scope: Scope | null, req: WebhookRequest): Promise<{ webhook: Webhook; secret: string }> {
  await requireReachable(ctx, req.url);
  const secret = newWebhookSecret();
  const id = await webhookNextId(ctx.db);
  const sealed = ctx.sealer.seal(secret, secretBinding(id));
  const webhook = { scope, url: req.url, events: typesOf(req.events), description: req.description ?? null };
  const stored = await ctx.db.transaction(async (tx) => {
    await webhookLockScope(tx, scope);
    return webhookInsert(tx, id, webhook, sealed, ctx.clock(), WEBHOOKS_PER_SCOPE);
  });
  // A scope that holds more already (made before the bound) keeps them all, and gets no more.
  if (!stored) throw conflict(`This scope has ${WEBHOOKS_PER_SCOPE} webhooks, the most one scope may have; delete one to make another.`);
  return { webhook: shown(stored), secret };
}

/** The types a webhook subscribes to: each once, in the catalogue's order; all of them when none is named. */
const typesOf = (events: readonly WebhookType[] | undefined): WebhookType[] => WEBHOOK_TYPES.filter((t) => events === undefined || events.includes(t));

export const webhookNotFound = () => notFound("No such webhook.");

/** A webhook `caller` may manage (null: the admin), else 404. */
async function manageable(ctx: WebhooksNeeds, caller: Scope | null, id: number): Promise<StoredWebhook> {
  const found = await webhookFindById(ctx.db, id);
  if (!found || (caller !== null && (found.scope === null || !mayManage(caller, found.scope)))) throw webhookNotFound();
  return found;
}

const shown = ({ secretSealed: _secret, ...webhook }: StoredWebhook): Webhook => webhook;

/** The webhooks `caller` may manage, by id: a page of them, or all. */
export async function listWebhooks(ctx: WebhooksNeeds, caller: Scope | null, page: WebhookPage = {}): Promise<Webhook[]> {
  return (await webhookListByScope(ctx.db, caller, page)).map(shown);
}

export async function getWebhook(ctx: WebhooksNeeds, caller: Scope | null, id: number): Promise<Webhook> {
  return shown(await manageable(ctx, caller, id));
}

export interface WebhookPatch {
  url?: string | undefined;
  events?: WebhookType[] | undefined;
  active?: boolean | undefined;
  description?: string | null | undefined;
}

export async function updateWebhook(ctx: WebhooksNeeds, caller: Scope | null, id: number, patch: WebhookPatch): Promise<Webhook> {
  const was = await manageable(ctx, caller, id);
  if (patch.url !== undefined && patch.url !== was.url) await requireReachable(ctx, patch.url);
  const updated = await webhookUpdate(ctx.db, id, {
    url: patch.url ?? was.url,
    events: patch.events === undefined ? was.events : typesOf(patch.events),
    description: patch.description === undefined ? was.description : patch.description,
    active: patch.active ?? was.active,
  }, ctx.clock());
  if (!updated) throw webhookNotFound();
  return shown(updated);
}

/** Deletes a webhook with its deliveries; 404 for one the caller may not manage (or none). */
export async function deleteWebhook(ctx: WebhooksNeeds, caller: Scope | null, id: number): Promise<void> {
  await manageable(ctx, caller, id);
  await webhookDelete(ctx.db, id);
}

export interface DeliveryPage {
  before?: number | undefined;
  limit: number;
  state?: DeliveryState | undefined;
}

/** A page of a webhook's deliveries, newest first. */
export async function listDeliveries(ctx: WebhooksNeeds, caller: Scope | null, id: number, page: DeliveryPage): Promise<WebhookDelivery[]> {
  await manageable(ctx, caller, id);
  return deliveryListByWebhook(ctx.db, id, page);
}
