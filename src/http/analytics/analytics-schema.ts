import { z } from "zod";
import { INTERVALS, OUTCOMES } from "../../domain/analytics/usage.ts";
import { rfc3339, timestamp } from "../schemas.ts";

// The analytics endpoints' query and answers (docs/api.md, "Analytics").
export const analyticsQuery = z.object({
  interval: z.enum(INTERVALS).optional().describe("The buckets' length: minute (kept 48 hours by default), hour (90 days) or day (2 years); default hour."),
  from: rfc3339.optional().describe("The range's start, rounded down to the interval; default 24 intervals before the start of the last one. Older than the interval is kept: 400."),
  to: rfc3339.optional().describe("The range's end, exclusive, rounded up to the interval; default the end of the current interval. At most 2,000 buckets."),
}).strict();

export const scopeAnalyticsQuery = analyticsQuery.extend({
  top: z.coerce.number().int().min(0).max(100).default(10).describe("How many of the most used keys to list (default 10, at most 100)."),
});

export const adminAnalyticsQuery = scopeAnalyticsQuery.extend({
  customer: z.string().min(1).optional().describe("Only this customer's keys: its id, uuid or name."),
  domain: z.string().min(1).optional().describe("Only this domain's keys (with customer): its id, uuid or name."),
});

const counts = Object.fromEntries(OUTCOMES.map((o) => [o, z.number().int()])) as Record<(typeof OUTCOMES)[number], z.ZodNumber>;
const credits = z.number().int().describe("Credits the admitted requests spent from a balance (0 where none binds the key)");

export const analyticsObject = z.object({
  interval: z.enum(INTERVALS),
  from: timestamp,
  to: timestamp.describe("Exclusive"),
  buckets: z.array(z.object({ start: timestamp, ...counts, credits }).strict()).describe("One per interval of the range, oldest first, zeros included; the verdicts by outcome"),
}).strict();

export const scopeAnalyticsObject = analyticsObject.extend({
  top: z.array(z.object({
    id: z.number().int().describe("The numeric id of the key's newest token (a rotated key's history goes on under its new key)"),
    name: z.string(),
    requests: z.number().int().describe("The sum of the seven outcomes over the range"),
    ...counts,
    credits,
  }).strict()).describe("The keys with the most requests in the range, most first; deleted and expired ones included"),
}).strict();
