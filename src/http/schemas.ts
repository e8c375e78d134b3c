import { z } from "zod";
import { EXPIRES_IN_SECONDS, GRACE_PERIOD_SECONDS } from "../domain/keys/expiry.ts";
import { KEY_ACTIONS } from "../domain/keys/key-event.ts";
import { keyNameSchema } from "../domain/keys/key-name.ts";
import { KEY_TYPES } from "../domain/model.ts";
import { LEVELS } from "../domain/scope/scope.ts";
import { codePoints, TEXT, TEXT_RULE } from "../domain/text.ts";
import { VERDICT_CODES } from "../services/verification/verify.ts";
import { COST, CREDITS_REMAINING } from "../domain/policy/policy.ts";
import { parseAddress } from "../domain/policy/restrictions/cidr.ts";
import { policyObject } from "./policy/policy-schema.ts";

// Request schemas: they validate requests and, through /openapi.json, describe them, so a rule the
// server checks is a rule the document states: one a schema cannot express (a time in the future) is
// said in its description. Unknown fields are ignored; wrong types and out-of-range values are 400.

/** At most `max` characters, counted as the document's maxLength counts them: code points, not UTF-16 units. */
function upTo<S extends z.ZodType<string>>(schema: S, max: number): S {
  return schema.refine((s) => s.length <= max || codePoints(s) <= max, `must be at most ${max} characters`).meta({ maxLength: max });
}

/** Free text (docs/api.md, "Text"): well-formed Unicode without NUL. Every free-text field is this; the others are ASCII patterns, which imply it. */
export const text = (max: number) => upTo(z.string().regex(TEXT, TEXT_RULE), max);
export const keyName = keyNameSchema.regex(TEXT, TEXT_RULE);

/** An RFC 3339 time with its offset ("Z" or "+02:00"); whether it lies in the future, the service checks against its clock. */
export const rfc3339 = z.iso
  .datetime({ offset: true, error: "must be an RFC 3339 time with an offset, such as 2026-12-31T23:59:59Z" })
  .transform((time) => new Date(time));

const FUTURE = "A time that is not in the future is 400: a rule of the clock, which this schema cannot state.";

/** expiresAt or expiresIn, not both: when a new key expires (docs/api.md, "Lifecycle"). */
const expiry = {
  expiresAt: rfc3339.optional().describe(`When the new key expires: a future RFC 3339 time. Not with expiresIn. ${FUTURE}`),
  expiresIn: z.number().int().min(EXPIRES_IN_SECONDS.min).max(EXPIRES_IN_SECONDS.max).optional()
    .describe(`Seconds from now until the new key expires (${EXPIRES_IN_SECONDS.min} to ${EXPIRES_IN_SECONDS.max}). Not with expiresAt.`),
};
const notBoth = (b: { expiresAt?: unknown; expiresIn?: unknown }) => b.expiresAt === undefined || b.expiresIn === undefined;
const NOT_BOTH = { error: "give expiresAt or expiresIn, not both", path: ["expiresIn"] };
/** The same rule, as the document states it (the two properties named again so that linters see them defined). */
const NOT_BOTH_SCHEMA = { not: { properties: { expiresAt: {}, expiresIn: {} }, required: ["expiresAt", "expiresIn"] } };

/** What the Policy component cannot state, as the fields that take one say it. */
const POLICY_RULES = "A policy is 400 also for an address or CIDR that is none, a malformed referrer or path pattern, or two rate " +
  "limits of one name (the message names the field): rules of docs/api.md, \"Key policy\", which this schema cannot state.";

/** A key's own policy in a request: replaced whole; null for none. */
const keyPolicy = policyObject.nullable().optional();

export const provisionBody = z.object({
  name: keyName.describe("Name of the key; unique among the live keys of its scope."),
  active: z.boolean().optional().describe("Whether the key may be used; default true."),
  policy: keyPolicy.describe(`The new key's own policy. A key that exists already (returned instead) keeps its own. ${POLICY_RULES}`),
  ...expiry,
}).refine(notBoth, NOT_BOTH).meta(NOT_BOTH_SCHEMA);

export const updateBody = z.object({
  name: keyName.optional(),
  active: z.boolean().optional(),
  expiresAt: rfc3339.nullable().optional().describe(`A future RFC 3339 time; null removes the expiry. ${FUTURE}`),
  policy: keyPolicy.describe(`The key's own policy, replaced whole; null removes it. A key may not change its own (403). ${POLICY_RULES}`),
});

export const rotateBody = z.object({
  gracePeriodSeconds: z.number().int().min(GRACE_PERIOD_SECONDS.min).max(GRACE_PERIOD_SECONDS.max).optional()
    .describe(`How long the old key keeps working, in seconds (${GRACE_PERIOD_SECONDS.min} to ${GRACE_PERIOD_SECONDS.max}); default 0: it stops at once.`),
  ...expiry,
}).refine(notBoth, NOT_BOTH).meta(NOT_BOTH_SCHEMA);

const flag = z.enum(["true", "false"]).transform((v) => v === "true");

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().describe("Page size; adds a Link rel=next header while more remain."),
  after: z.coerce.number().int().min(0).max(2 ** 31 - 1).optional().describe("Only keys with an id above this one."),
  active: flag.optional(),
  type: z.enum(KEY_TYPES).optional(),
  name: keyName.optional(),
});

const action = z.enum(KEY_ACTIONS).optional().describe("Only events of this action.");

export const keyEventsQuery = z.object({ action });

/** A query parameter that is a whole number written in digits, nothing else ("0x10", "1e3" and " 7" are 400). */
const digits = (min: number, max: number) =>
  z.preprocess((v) => (typeof v === "string" && /^[0-9]+$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));

export const eventsQuery = z.object({
  limit: digits(1, 1000).default(100).describe("Page size (default 100); a Link rel=next header follows while more remain."),
  before: digits(1, Number.MAX_SAFE_INTEGER).optional().describe("Only events with an id below this one."),
  action,
});

// Directory names (docs/api.md, "Directory"), each rule a pattern, so that the document states it too.
// A customer or application: 1-64 of A-Za-z0-9._-, not digits only (an id), not `self` in any case.
const entityName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "name must be 1-64 characters of A-Za-z0-9._-")
  .regex(/^(?![0-9]+$)/, "name must not be digits only")
  .regex(/^(?![Ss][Ee][Ll][Ff]$)/, "name must not be self");

/** A DNS host name: labels of 1-63 letters, digits and inner hyphens, joined by dots. */
const HOST_NAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
export const domainName = z.string().max(253, "domain must be at most 253 characters")
  .regex(HOST_NAME, "domain must be a DNS host name")
  .regex(/^(?!(?:.*\.)?[0-9]+$)/, "domain must not end in a numeric label (it would read as an id)")
  .transform((s) => s.toLowerCase());

/**
 * An application's url, stored exactly as given: not through z.url, which trims it and drops tabs and
 * newlines, so that what was read back would not be what was sent. Whitespace and control characters,
 * which a URL parser drops or encodes, are refused instead.
 */
const httpUrl = upTo(z.string().regex(TEXT, TEXT_RULE), 2048)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[Hh][Tt][Tt][Pp][Ss]?:[^\x00-\x20\x7f]*$/, "url must be an http or https URL, without spaces or control characters")
  .refine((s) => URL.canParse(s), "url must be a URL")
  .meta({ format: "uri" });

export const customerBody = z.object({ name: entityName });
export const domainBody = z.object({ domain: domainName });
export const applicationBody = z.object({
  name: entityName,
  url: httpUrl.nullable().optional()
    .describe("Where the application answers: an http or https URL, without spaces or control characters, that the WHATWG URL Standard parses (a host it refuses, such as 256.0.0.1, is 400 though the pattern lets it pass)."),
  method: z.enum(["GET", "POST"]).optional(),
});
export const subscriberBody = z.object({ msisdn: z.string().regex(/^\+?[0-9]{3,15}$/, "msisdn must be 3-15 digits, optionally after +") });
export const userBody = z.object({
  email: z.email().max(254),
  domain: text(253).min(1).optional().describe("The user's domain (id, uuid or name); none for a customer-level user."),
});
export const invokeBody = z.unknown();

/** A policy, or null to remove it: the body of PUT .../policy. */
export const policyBody = policyObject.nullable();

const balance = z.number({ error: "must be a number" }).int("must be a whole number");
/** Set a balance, or add to it: exactly one of the two. */
export const creditsBody = z.strictObject({
  remaining: balance.min(CREDITS_REMAINING.min, `must be at least ${CREDITS_REMAINING.min}`).max(CREDITS_REMAINING.max, `must be at most ${CREDITS_REMAINING.max}`).optional()
    .describe("Sets the balance to this."),
  add: balance.min(-CREDITS_REMAINING.max, `must be at least ${-CREDITS_REMAINING.max}`).max(CREDITS_REMAINING.max, `must be at most ${CREDITS_REMAINING.max}`).optional()
    .describe(`Adds this to the balance (negative takes), in one step however many do it at once; the balance stays within 0 and ${CREDITS_REMAINING.max}.`),
}).refine((b) => (b.remaining === undefined) !== (b.add === undefined), "give remaining or add, one of the two")
  .meta({ oneOf: [{ properties: { remaining: {} }, required: ["remaining"] }, { properties: { add: {} }, required: ["add"] }] });

// Response schemas, for /openapi.json (and tests that hold answers to them).
export const timestamp = z.iso.datetime();
const entity = { id: z.number().int(), uuid: z.uuid(), active: z.boolean(), createdAt: timestamp, modifiedAt: timestamp };
/** An entity's policy, binding every key inside it (docs/api.md, "Key policy"); users have none of their own. */
const policed = { ...entity, policy: policyObject.nullable().describe("The entity's policy, binding every key inside it; null for none.") };
export const customerObject = z.object({ ...policed, name: z.string() });
export const domainObject = z.object({ ...policed, tenantId: z.number().int(), domain: z.string() });
export const applicationObject = z.object({
  ...policed, tenantId: z.number().int(), domainId: z.number().int(), name: z.string(), url: z.string().nullable(), method: z.enum(["GET", "POST"]),
});
export const subscriberObject = z.object({ ...policed, tenantId: z.number().int(), domainId: z.number().int(), msisdn: z.string() });
export const userObject = z.object({ ...entity, tenantId: z.number().int(), domainId: z.number().int().nullable(), email: z.string() });

const id = z.number().int();
export const keyObject = z.object({
  id,
  keyId: z.string().regex(/^XI[0-9A-F]{32}$/).describe("The bearer token."),
  name: z.string(),
  active: z.boolean(),
  type: z.enum(KEY_TYPES),
  tenantId: id,
  domainId: id.nullable(),
  applicationId: id.nullable(),
  subscriberId: id.nullable(),
  userId: id.nullable(),
  secret: z.null(),
  createdAt: timestamp,
  modifiedAt: timestamp,
  deletedAt: timestamp.nullable(),
  activeAt: timestamp.nullable(),
  expiresAt: timestamp.nullable().describe("From this time on the key is refused, and gone from lists; null for never."),
  lastUsedAt: timestamp.nullable().describe("The last successful authentication, to within a minute; null if never used."),
  replacedBy: id.nullable().describe("The id of the key that replaced this one in a rotation."),
  parentId: id.nullable().describe("The id of the key whose token made this one through the key paths; null for keys made by the admin, the operator or the runtime. A key's policy binds every key it makes, and theirs (docs/api.md, \"Restricted keys\"); a rotation's new key keeps the old key's parent."),
  policy: policyObject.nullable().describe("The key's own policy; null for none. The policies of the entities it lies in bind it too, and are not repeated here."),
  tenant: customerObject,
  "tenant-id": id,
  domain: domainObject.optional(),
  "domain-id": id.optional(),
  application: applicationObject.optional(),
  "application-id": id.optional(),
  subscriber: subscriberObject.optional(),
  "subscriber-id": id.optional(),
  user: userObject.optional(),
  "user-id": id.optional(),
}).strict();

const actorObject = z.discriminatedUnion("type", [
  z.object({ type: z.literal("key"), id, name: z.string() }).strict(),
  z.object({ type: z.literal("admin") }).strict(),
  z.object({ type: z.literal("operator"), apiKey: z.string().describe("namespace/name of the ApiKey resource") }).strict(),
  z.object({ type: z.literal("runtime") }).strict(),
  z.object({ type: z.literal("system") }).strict(),
  z.object({ type: z.literal("import") }).strict().describe("An import of keys (POST /admin/keys/import)"),
  z.object({ type: z.literal("scanner"), name: z.enum(["github", "admin"]).describe("Who reported the leak: GitHub (/leaks/github) or the admin (/admin/leaks)") }).strict(),
]);
/** A `leaked` event's `changes.leak`: where the scanner found the token (docs/leaks.md). */
const leakChange = z.object({ url: z.string().nullable(), source: z.string().nullable() }).strict();
export const eventObject = z.object({
  id,
  at: timestamp,
  action: z.enum(KEY_ACTIONS),
  key: z.object({
    id, name: z.string(), type: z.enum(KEY_TYPES), tenantId: id, domainId: id.nullable(), applicationId: id.nullable(), subscriberId: id.nullable(),
  }).strict().nullable().describe("The key the event is about; null for an export (action exported), which is about no one key."),
  actor: actorObject,
  changes: z.object({ leak: leakChange.optional() }).catchall(z.tuple([z.unknown(), z.unknown()]))
    .describe("Each changed field: [before, after]; a `leaked` event's `leak` is where the token was found instead."),
  requestId: z.string().nullable(),
  count: z.number().int().min(0).optional().describe("An export's number of keys (action exported)."),
}).strict();

export const creditsObject = z.object({
  remaining: z.number().int().describe("The live balance: short of the truth by what processes hold unused, for a second at most."),
  nextRefillAt: timestamp.nullable().describe("When the balance is next set to the refill's amount; null without a refill."),
}).strict();

export const userWithKeyObject = userObject.extend({ key: keyObject });
export const errorObject = z.object({ status: z.number().int(), error: z.string(), message: z.string() });
export const healthObject = z.object({ status: z.literal("ok") });
/** The OpenAPI document itself: an object, described by the OpenAPI specification, not here. */
export const openApiObject = z.object({ openapi: z.string(), info: z.object({ title: z.string(), version: z.string() }).loose() }).loose();

/** How long POST /verify's `ip` and `referrer` may be. */
export const VERIFY_IP_MAX = 64;
export const VERIFY_REFERRER_MAX = 4096;

export const verifyBody = z.object({
  key: text(256).describe("The token to verify."),
  path: text(4096).regex(/^\//, "path must start with / (a path, not a URL)").optional()
    .describe("The platform path the token is used on; without it, no path is checked."),
  method: z.string().regex(/^[A-Za-z]{1,16}$/, "method must be an HTTP method").transform((m) => m.toUpperCase()).optional()
    .describe("The method used on the path; default GET."),
  // The document says it by the formats every JSON Schema validator knows; the check is the domain's parser.
  ip: z.string().max(VERIFY_IP_MAX).refine((ip) => parseAddress(ip) !== undefined, "ip must be an IPv4 or IPv6 address")
    .meta({ anyOf: [{ format: "ipv4" }, { format: "ipv6" }] }).optional()
    .describe("The original client's address, judged against a key policy's `ips`; a key restricted by `ips` is refused without it."),
  referrer: text(VERIFY_REFERRER_MAX).optional()
    .describe("The original request's Referer, judged against a key policy's `referrers`; a key restricted by `referrers` is refused without it."),
  cost: z.number().int().min(COST.min).max(COST.max).optional()
    .describe(`What the request costs the key's rate limits and credits (${COST.min} to ${COST.max}, default ${COST.default}). A cost of 0 is refused where 1 would be (a full window, an empty balance) and charges nothing.`),
});

const rateLimitReport = z.object({
  name: z.string(),
  scope: z.enum(["key", ...LEVELS]).describe("Whose limit: a key's own (this key's or an ancestor's, shared by it and all its descendants), or an entity's it lies in (shared by all its keys)."),
  id: id.optional().describe("For a key's limit: the numeric id of the key whose policy holds it (this key, or the ancestor that made it)."),
  limit: z.number().int(),
  remaining: z.number().int().describe("What the window has left, after this request's cost when it was admitted."),
  reset: z.number().int().min(1).describe("Whole seconds until the window ends."),
  exceeded: z.boolean().describe("This limit is one that refused the request."),
});

export const verdictObject = z.object({
  valid: z.boolean(),
  code: z.enum(VERDICT_CODES),
  reason: z.enum(["ip", "referrer", "method", "path"]).optional().describe("RESTRICTED only: which restriction of the key's policies refused the request."),
  key: keyObject.omit({ keyId: true }).extend({ level: z.enum(LEVELS) }).optional(),
  ratelimits: z.array(rateLimitReport).optional().describe("For a key with rate limits: those that counted the request."),
  credits: z.object({ remaining: z.number().int().describe("The nearest balance to the key, after the charge.") }).optional()
    .describe("For a key with credits."),
});
