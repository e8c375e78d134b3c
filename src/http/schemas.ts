import { z } from "zod";
import { keyNameSchema } from "../domain/key-name.ts";
import { KEY_TYPES } from "../domain/model.ts";
import { LEVELS } from "../domain/scope.ts";
import { VERDICT_CODES } from "../services/verify.ts";

// Request schemas: they validate requests and, through /openapi.json, describe them.
// Unknown fields are ignored; wrong types and out-of-range values are 400.

export const provisionBody = z.object({
  name: keyNameSchema.describe("Name of the key; unique among the live keys of its scope."),
  active: z.boolean().optional().describe("Whether the key may be used; default true."),
});

export const updateBody = z.object({
  name: keyNameSchema.optional(),
  active: z.boolean().optional(),
});

const flag = z.enum(["true", "false"]).transform((v) => v === "true");

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().describe("Page size; adds a Link rel=next header while more remain."),
  after: z.coerce.number().int().min(0).max(2 ** 31 - 1).optional().describe("Only keys with an id above this one."),
  active: flag.optional(),
  type: z.enum(KEY_TYPES).optional(),
  name: keyNameSchema.optional(),
});

// A name of a customer or application: 1-64 of A-Za-z0-9._-, not digits only (an id), not `self`.
const entityName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "name must be 1-64 characters of A-Za-z0-9._-")
  .refine((s) => !/^[0-9]+$/.test(s), "name must not be digits only")
  .refine((s) => s.toLowerCase() !== "self", "name must not be self");

const hostLabel = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
export const domainName = z.string().max(253, "domain must be at most 253 characters").transform((s) => s.toLowerCase())
  .refine((s) => s.split(".").every((label) => hostLabel.test(label)), "domain must be a DNS host name")
  .refine((s) => !/^[0-9]+$/.test(s.split(".").pop() ?? ""), "domain must not end in a numeric label");

export const customerBody = z.object({ name: entityName });
export const domainBody = z.object({ domain: domainName });
export const applicationBody = z.object({
  name: entityName,
  url: z.url({ protocol: /^https?$/ }).max(2048).nullable().optional(),
  method: z.enum(["GET", "POST"]).optional(),
});
export const subscriberBody = z.object({ msisdn: z.string().regex(/^\+?[0-9]{3,15}$/, "msisdn must be 3-15 digits, optionally after +") });
export const userBody = z.object({
  email: z.email().max(254),
  domain: z.string().min(1).max(253).optional().describe("The user's domain (id, uuid or name); none for a customer-level user."),
});
export const invokeBody = z.unknown();

// Response schemas, for /openapi.json (and tests that hold answers to them).
const timestamp = z.iso.datetime();
const entity = { id: z.number().int(), uuid: z.uuid(), active: z.boolean(), createdAt: timestamp, modifiedAt: timestamp };
export const customerObject = z.object({ ...entity, name: z.string() });
export const domainObject = z.object({ ...entity, tenantId: z.number().int(), domain: z.string() });
export const applicationObject = z.object({
  ...entity, tenantId: z.number().int(), domainId: z.number().int(), name: z.string(), url: z.string().nullable(), method: z.enum(["GET", "POST"]),
});
export const subscriberObject = z.object({ ...entity, tenantId: z.number().int(), domainId: z.number().int(), msisdn: z.string() });
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

export const userWithKeyObject = userObject.extend({ key: keyObject });
export const errorObject = z.object({ status: z.number().int(), error: z.string(), message: z.string() });
export const healthObject = z.object({ status: z.literal("ok") });
/** The OpenAPI document itself: an object, described by the OpenAPI specification, not here. */
export const openApiObject = z.object({ openapi: z.string(), info: z.object({ title: z.string(), version: z.string() }).loose() }).loose();

export const verifyBody = z.object({
  key: z.string().max(256).describe("The token to verify."),
  path: z.string().max(4096).regex(/^\//, "path must start with / (a path, not a URL)").optional()
    .describe("The platform path the token is used on; without it, no path is checked."),
  method: z.string().regex(/^[A-Za-z]{1,16}$/, "method must be an HTTP method").transform((m) => m.toUpperCase()).optional()
    .describe("The method used on the path; default GET."),
});
export const verdictObject = z.object({
  valid: z.boolean(),
  code: z.enum(VERDICT_CODES),
  key: keyObject.omit({ keyId: true }).extend({ level: z.enum(LEVELS) }).optional(),
});
