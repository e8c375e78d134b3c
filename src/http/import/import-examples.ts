import { z } from "zod";
import { errorObject } from "../schemas.ts";

// The import's and the export's lines as /openapi.json states them, with examples (acme's, as in
// examples.ts).

export const IMPORT_EXAMPLE = [
  { customer: "acme", domain: "sip.acme.example", name: "billing", keyId: "XI0123456789ABCDEF0123456789AB7798", createdAt: "2024-03-01T09:00:00Z", expiresAt: "2027-02-21T10:00:00Z" },
  { customer: "acme", domain: "sip.acme.example", application: "ivr", name: "ivr", keyId: "XI00112233445566778899AABBCCDDEEFF", policy: { credits: { remaining: 1000 } } },
  { customer: "acme", user: "owner@acme.example", name: "owner@acme.example", keyId: "XIFFEEDDCCBBAA99887766554433221100", active: false },
];

export const IMPORT_ANSWER_EXAMPLE = [
  { line: 1, status: "created", id: 17 },
  { line: 2, status: "unchanged", id: 18 },
  { line: 3, status: "conflict", error: { status: 409, error: "conflict", message: "This user already has another live key." } },
  { summary: { created: 1, updated: 0, unchanged: 1, conflict: 1, invalid: 0 } },
];

export const EXPORT_EXAMPLE = [
  { customer: "acme", domain: "sip.acme.example", name: "billing", keyId: "XI0123456789ABCDEF0123456789AB7798", type: "customer", active: true, createdAt: "2024-03-01T09:00:00.000Z", expiresAt: "2027-02-21T10:00:00.000Z" },
];

const count = z.number().int().min(0);

/** A line of the import's answer: one per input line, in order, then the summary (or, if the import stopped, an error). */
export const importAnswerLine = z.union([
  z.object({
    line: z.number().int().min(1).describe("The input line's number, from 1."),
    status: z.enum(["created", "updated", "unchanged", "conflict", "invalid"]),
    id: z.number().int().optional().describe("The key's numeric id: with every status but conflict and invalid."),
    error: errorObject.optional().describe("Why the line was not imported: with conflict and invalid."),
  }).strict(),
  z.object({ summary: z.object({ created: count, updated: count, unchanged: count, conflict: count, invalid: count }).strict() }).strict(),
  z.object({ error: errorObject.describe("The import stopped here (the database could not be reached): the lines answered before stand.") }).strict(),
]);
