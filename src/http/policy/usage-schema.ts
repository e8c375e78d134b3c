import { z } from "zod";
import { timestamp } from "../schemas.ts";

// GET {base}/{key-id}/usage's answer (docs/api.md, "Key policy").
const policyScope = z.enum(["key", "customer", "domain", "application", "subscriber"]);

export const usageObject = z.object({
  ratelimits: z.array(z.object({
    name: z.string(),
    scope: policyScope.describe("The level whose policy holds the limit: its count is shared by every key inside that level (for a key's: by the key and its descendants)"),
    id: z.number().int().optional().describe("For a limit of an ancestor's policy (a key that made this one, or made its maker...): that key's numeric id"),
    limit: z.number().int(),
    windowSeconds: z.number().int(),
    remaining: z.number().int().describe("What no process has been handed yet in the current window: at most what processes hold unspent short of the truth"),
    reset: z.number().int().describe("Whole seconds until the current window ends, at least 1"),
  }).strict()),
  credits: z.object({
    scope: policyScope.describe("The level of the nearest balance: the key's own, else its innermost entity's"),
    remaining: z.number().int(),
    nextRefillAt: timestamp.nullable(),
  }).strict().nullable().describe("The nearest balance that binds the key; null where none does"),
}).strict();
