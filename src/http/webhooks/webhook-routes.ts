// webhooks/ of http/: the webhook paths of a scope and of the admin, and their schemas. It may use
// domain/, http/'s top files, services/ (webhooks, directory) and http/keys/.

import type { Request, Response } from "express";
import { notFound } from "../../domain/errors.ts";
import { parseId } from "../../domain/scope/identifier.ts";
import type { Scope } from "../../domain/scope/scope.ts";
import { WEBHOOKS_PER_SCOPE, type Webhook, type WebhookDelivery } from "../../domain/webhooks/webhook.ts";
import type { DirectoryNeeds } from "../../services/directory/needs.ts";
import type { WebhooksNeeds } from "../../services/webhooks/needs.ts";
import { resolveNamedScope } from "../../services/directory/named-scope.ts";
import {
  createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, updateWebhook, webhookNotFound, type DeliveryPage,
} from "../../services/webhooks/webhooks.ts";
import { setNextLink } from "../keys/key-list.ts";
import { refuseRestricted } from "../keys/key-scope.ts";
import { route, type Route } from "../route.ts";
import {
  adminWebhookBody, deliveriesQuery, deliveryObject, newWebhookObject, webhookBody, webhookListQuery, webhookObject, webhookUpdateBody,
} from "./webhook-schemas.ts";

// Webhooks (docs/webhooks.md): a key's at /webhooks, for the webhooks whose scope lies inside its own
// (another's is 404, like none); the admin's at /admin/webhooks, every one, each at a scope the body
// names or at none (every key's).

/** A webhook as the API shows it; `secret` only in the answer that creates it. */
export function webhookJson(w: Webhook, secret?: string): Record<string, unknown> {
  return {
    id: w.id, url: w.url, events: w.events, description: w.description, active: w.active, ...(secret !== undefined && { secret }),
    createdAt: w.createdAt, modifiedAt: w.modifiedAt,
    tenantId: w.scope?.tenantId ?? null, domainId: w.scope?.domainId ?? null, applicationId: w.scope?.applicationId ?? null, subscriberId: w.scope?.subscriberId ?? null,
  };
}

export function deliveryJson(d: WebhookDelivery): Record<string, unknown> {
  return { id: d.id, type: d.type, state: d.state, createdAt: d.createdAt, attempts: d.attempts, nextAttemptAt: d.nextAttemptAt };
}

/** The webhook a path names: a number, else none (404, as for another's). */
function webhookRef(req: Request): number {
  const id = parseId(String(req.params.webhookId));
  if (id === undefined) throw webhookNotFound();
  return id;
}

/** A page of deliveries, newest first, with `Link: rel="next"` while older ones remain: one more than asked is read to know. */
async function sendDeliveryPage(req: Request, res: Response, page: DeliveryPage, read: (page: DeliveryPage) => Promise<WebhookDelivery[]>): Promise<void> {
  const deliveries = await read({ ...page, limit: page.limit + 1 });
  if (deliveries.length > page.limit) {
    deliveries.length = page.limit;
    setNextLink(req, res, "before", deliveries[page.limit - 1]!.id);
  }
  res.json(deliveries.map(deliveryJson));
}

/** The operations on one base: the caller's scope (null: the admin's, every webhook) comes from the request. */
/** A key route of webhooks, refused (403) to a restricted key first thing (docs/api.md, "Restricted keys"). */
function unrestrictedOnly(r: Route): Route {
  return {
    ...r,
    refusals: [...(r.refusals ?? []), "forbidden"],
    handle: (req, res, input) => {
      refuseRestricted(req, "webhooks");
      return r.handle(req, res, input);
    },
  };
}

function webhookRoutes(ctx: WebhooksNeeds & DirectoryNeeds, base: string, admin: boolean, caller: (req: Request) => Scope | null): Route[] {
  const one = `${base}/:webhookId`;
  const noun = admin ? "AdminWebhook" : "Webhook";
  const tag = admin ? "admin" : "webhooks";
  const auth = admin ? "admin" : "key";
  const whose = admin ? "every webhook" : "the webhooks whose scope lies inside the calling key's";
  return [
    route({
      method: "post", path: base, operationId: `create${noun}`, tag, auth, refusals: admin ? ["not_found", "conflict"] : ["conflict"],
      // A key's body is the admin's without `scope`.
      body: admin ? adminWebhookBody : (webhookBody as unknown as typeof adminWebhookBody),
      summary: admin ? `Create a webhook at the scope the body names, or for every key; 409 when that scope has ${WEBHOOKS_PER_SCOPE} already`
        : `Create a webhook at the calling key's scope: it gets the messages of the keys inside it; 409 when the scope has ${WEBHOOKS_PER_SCOPE} already`,
      ok: { status: 201, description: "The webhook, with its signing secret: the one time it is shown", schema: newWebhookObject },
      handle: async (req, res, { body }) => {
        let scope = caller(req);
        if (body.scope) {
          const named = await resolveNamedScope(ctx, body.scope);
          if (!named.found) throw notFound(`No such ${named.missing}.`);
          scope = named.scope;
        }
        const { webhook, secret } = await createWebhook(ctx, scope, body);
        res.status(201).json(webhookJson(webhook, secret));
      },
    }),
    route({
      method: "get", path: base, operationId: `list${noun}s`, tag, auth, query: webhookListQuery,
      summary: `List ${whose}, by id`,
      ok: { status: 200, description: "Webhooks: all of them, or a page with `limit`", schema: webhookObject.array(), headers: ["Link"] },
      handle: async (req, res, { query: { limit, after } }) => {
        // One more than asked is read to know whether a Link rel="next" is due.
        const hooks = await listWebhooks(ctx, caller(req), { after, limit: limit === undefined ? undefined : limit + 1 });
        if (limit !== undefined && hooks.length > limit) {
          hooks.length = limit;
          setNextLink(req, res, "after", hooks[limit - 1]!.id);
        }
        res.json(hooks.map((w) => webhookJson(w)));
      },
    }),
    route({
      method: "get", path: one, operationId: `get${noun}`, tag, auth, refusals: ["not_found"], summary: "Get a webhook",
      ok: { status: 200, description: "The webhook", schema: webhookObject },
      handle: async (req, res) => void res.json(webhookJson(await getWebhook(ctx, caller(req), webhookRef(req)))),
    }),
    route({
      method: "put", path: one, operationId: `update${noun}`, tag, auth, body: webhookUpdateBody, refusals: ["not_found"],
      summary: "Change a webhook's url, events, description, or stop or restart it",
      ok: { status: 200, description: "The webhook", schema: webhookObject },
      handle: async (req, res, { body }) => void res.json(webhookJson(await updateWebhook(ctx, caller(req), webhookRef(req), body))),
    }),
    route({
      method: "delete", path: one, operationId: `delete${noun}`, tag, auth, refusals: ["not_found"], summary: "Delete a webhook and its deliveries",
      ok: { status: 204, description: "Deleted" },
      handle: async (req, res) => {
        await deleteWebhook(ctx, caller(req), webhookRef(req));
        res.status(204).end();
      },
    }),
    route({
      method: "get", path: `${one}/deliveries`, operationId: `list${noun}Deliveries`, tag, auth, query: deliveriesQuery, refusals: ["not_found"],
      summary: "A webhook's deliveries, newest first: each message's attempts, and when it is tried next",
      ok: { status: 200, description: "A page of deliveries", schema: deliveryObject.array(), headers: ["Link"] },
      handle: async (req, res, { query }) => {
        const id = webhookRef(req);
        await sendDeliveryPage(req, res, query, (page) => listDeliveries(ctx, caller(req), id, page));
      },
    }),
  ];
}

export function webhooksRoutes(ctx: WebhooksNeeds & DirectoryNeeds): Route[] {
  return [
    ...webhookRoutes(ctx, "/webhooks", false, (req) => req.principal!.scope).map(unrestrictedOnly),
    ...webhookRoutes(ctx, "/admin/webhooks", true, () => null),
  ];
}
