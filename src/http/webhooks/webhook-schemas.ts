import { z } from "zod";
import { DELIVERY_STATES, WEBHOOK_TYPES } from "../../domain/webhooks/webhook.ts";
import { WEBHOOK_URL_MAX } from "../../domain/webhooks/webhook-url.ts";
import { listQuery, text } from "../schemas.ts";

// Webhooks' requests and answers (docs/webhooks.md). What a schema cannot state (an address a name
// resolves to, http without KEYPLANE_WEBHOOK_ALLOW_HTTP) the url's description says.

const URL_RULES = "An https URL (http only where KEYPLANE_WEBHOOK_ALLOW_HTTP=true), without spaces, control characters, user name or password. " +
  "A host that is, or whose name resolves to, an address the IANA special-purpose registries do not mark globally reachable " +
  "(loopback, private, link-local, unspecified, documentation, benchmarking, reserved...; an IPv6 form carrying an IPv4 address is judged by that address) is 400 (unless " +
  "KEYPLANE_WEBHOOK_ALLOW_PRIVATE=true): a rule of the network, which this schema cannot state.";
const url = z.string().max(WEBHOOK_URL_MAX)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[Hh][Tt][Tt][Pp][Ss]?:\/\/[^\x00-\x20\x7f]+$/, "url must be an http or https URL, without spaces or control characters")
  .meta({ format: "uri" })
  .describe(URL_RULES);
const events = z.array(z.enum(WEBHOOK_TYPES)).min(1).max(WEBHOOK_TYPES.length * 4)
  .describe("The message types it is sent; default all of them.");
const description = text(256).nullable().optional().describe("For people: what the webhook is for.");

export const webhookBody = z.object({ url, events: events.optional(), description });

/** The two refinements of a scope below, as the document states them (the properties named again so that linters see them defined). */
const SCOPE_RULES = {
  dependentRequired: { application: ["domain"], subscriber: ["domain"] },
  not: { properties: { application: {}, subscriber: {} }, required: ["application", "subscriber"] },
};

/** The admin's: also the scope whose keys' messages it gets; none for every key. */
export const adminWebhookBody = webhookBody.extend({
  scope: z.object({
    customer: text(253).min(1).describe("The customer: id, uuid or name."),
    domain: text(253).min(1).optional().describe("Within it, a domain: id, uuid or DNS name."),
    application: text(253).min(1).optional().describe("Within the domain, a voice application: id, uuid or name."),
    subscriber: text(253).min(1).optional().describe("Within the domain, a subscriber: msisdn, id or uuid."),
  }).strict()
    .refine((s) => s.domain !== undefined || (s.application === undefined && s.subscriber === undefined), { error: "an application or subscriber needs its domain", path: ["domain"] })
    .refine((s) => s.application === undefined || s.subscriber === undefined, { error: "give an application or a subscriber, not both", path: ["subscriber"] })
    .meta(SCOPE_RULES)
    .optional()
    .describe("The scope whose keys' messages the webhook gets; left out, every key's. An unknown entity is 404. An application or " +
      "subscriber needs its domain, and a scope has one or the other, not both (400)."),
});

export const webhookUpdateBody = z.object({
  url: url.optional(),
  events: events.optional(),
  active: z.boolean().optional().describe("false stops its messages: none is written for it, and those pending fail at their next attempt's time."),
  description,
});

const id = z.number().int();
const timestamp = z.iso.datetime();
export const webhookObject = z.object({
  id,
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_TYPES)),
  description: z.string().nullable(),
  active: z.boolean().describe("false once deactivated by PUT, or by a receiver's 410 Gone."),
  createdAt: timestamp,
  modifiedAt: timestamp,
  tenantId: id.nullable().describe("The scope whose keys' messages it gets; a null tenantId (the admin's only) is every key's."),
  domainId: id.nullable(),
  applicationId: id.nullable(),
  subscriberId: id.nullable(),
}).strict();

export const newWebhookObject = webhookObject.extend({
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/]{43}=$/).describe("The signing secret: shown in this answer only. Keep it where the receiver can read it."),
}).strict();

export const deliveryObject = z.object({
  id: z.number().int().describe("Also its webhook-id header, as msg_<id>."),
  type: z.enum(WEBHOOK_TYPES),
  state: z.enum(DELIVERY_STATES),
  createdAt: timestamp.describe("The message's time: its body's timestamp."),
  attempts: z.array(z.object({
    at: timestamp,
    status: z.number().int().nullable().describe("The receiver's HTTP status; null when there was no answer."),
    error: z.string().nullable().describe("Why there was no answer: a time-out, a refused connection, a refused address..."),
    durationMs: z.number().int().nullable(),
  }).strict()).describe("Oldest first."),
  nextAttemptAt: timestamp.nullable().describe("When it is tried next; null once delivered or failed."),
}).strict();

const digits = (min: number, max: number) =>
  z.preprocess((v) => (typeof v === "string" && /^[0-9]+$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));

export const deliveriesQuery = z.object({
  limit: digits(1, 1000).default(100).describe("Page size (default 100); a Link rel=next header follows while more remain."),
  before: digits(1, Number.MAX_SAFE_INTEGER).optional().describe("Only deliveries with an id below this one."),
  state: z.enum(DELIVERY_STATES).optional().describe("Only deliveries in this state."),
});

/** Webhooks are paged as keys are (docs/api.md, "Keys"): the same parameters, bounds and answers. */
export const webhookListQuery = z.object({
  limit: listQuery.shape.limit,
  after: listQuery.shape.after.describe("Only webhooks with an id above this one."),
});
