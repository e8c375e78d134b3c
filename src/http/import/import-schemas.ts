import { z } from "zod";
import { KEY_TYPES } from "../../domain/model.ts";
import type { ImportLine } from "../../domain/import/import-line.ts";
import { isTokenFormat } from "../../domain/keys/token.ts";
import type { ImportedEntity } from "../../services/import/needs.ts";
import { policyObject } from "../policy/policy-schema.ts";
import { applicationBody, customerBody, domainBody, keyName, rfc3339, subscriberBody, userBody } from "../schemas.ts";

// The import's line and the export's query (docs/api.md, "Import and export"): the key paths' own
// schemas for a key's name, times and policy, so that a line is refused exactly where a request is.

/** An entity as the key paths name it: id (a JSON number or text), uuid or name. */
const entityRef = z.union([z.number().int().positive().transform(String), z.string().min(1).max(254)]);

export const importLineObject: z.ZodType<ImportLine> = z.object({
  customer: entityRef,
  domain: entityRef.optional(),
  application: entityRef.optional(),
  subscriber: entityRef.optional(),
  user: entityRef.optional().describe("The user whose key this is (email, id or uuid): a user's key, at the user's scope."),
  name: keyName,
  keyId: z.string().refine(isTokenFormat, "keyId must be XI and 32 upper-case hexadecimal characters"),
  type: z.enum(KEY_TYPES).optional().describe("Must be the type the scope gives: user, application, subscriber, else customer."),
  active: z.boolean().default(true),
  createdAt: rfc3339.optional().describe("When the key was created on the platform it comes from; by default, now."),
  expiresAt: rfc3339.nullable().optional().describe("When the key expires; a time already past is refused."),
  policy: policyObject.nullable().optional(),
});

export const importQuery = z.object({
  createDirectory: z.enum(["true", "false"]).optional().transform((v) => v === "true")
    .describe("Create the customers, domains, applications (by name), subscribers (by msisdn) and users (by email) that lines name and that do not exist."),
});

export const exportQuery = z.object({
  customer: z.string().min(1).optional().describe("Only this customer's keys (id, uuid or name)."),
  domain: z.string().min(1).optional().describe("Only this domain's keys, within `customer` (id, uuid or name)."),
}).refine((q) => q.domain === undefined || q.customer !== undefined, { error: "domain needs its customer", path: ["domain"] });

const NAME_SCHEMAS: Record<ImportedEntity, z.ZodType> = {
  customer: customerBody.shape.name,
  domain: domainBody.shape.domain,
  application: applicationBody.shape.name,
  subscriber: subscriberBody.shape.msisdn,
  user: userBody.shape.email,
};

/** Why a text cannot name a new entity of this kind, as its POST would refuse it; undefined when it can. */
export function creatable(kind: ImportedEntity, name: string): string | undefined {
  const result = NAME_SCHEMAS[kind].safeParse(name);
  return result.success ? undefined : result.error.issues.map((i) => i.message).join("; ");
}
