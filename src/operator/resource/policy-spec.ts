// spec.policy of an ApiKey: the key's own policy (docs/api.md, "Key policy") in a form the CRD's
// structural schema can carry, so that the API server refuses what bounds, enums, patterns and a
// map list keyed by name can say. The rest (addresses, CIDRs, referrer and path patterns) is the
// domain's compilePolicy, run as the refinement: resolveSpec reports its reason as InvalidSpec.
import { z } from "zod";
import { compilePolicy } from "../../domain/policy/compile.ts";
import {
  CREDITS_REMAINING, LEAK_POLICIES, LIST_ENTRIES, METHOD, RATELIMIT_LIMIT, RATELIMIT_NAME, RATELIMITS_MAX, REFILL_AMOUNT, REFILL_DAY, WINDOW_SECONDS,
  type Policy,
} from "../../domain/policy/policy.ts";
import { isText, TEXT_RULE } from "../../domain/text.ts";

/** How long one entry of a list may be: as the REST API takes it (http/policy/policy-schema.ts). */
const ENTRY_MAX = 2048;

const whole = ({ min, max }: { min: number; max: number }) => z.int().min(min).max(max);
// Above 2^31: the API server must know these are 64-bit.
const whole64 = (bounds: { min: number; max: number }) => whole(bounds).meta({ format: "int64" });

const entries = (entry: z.ZodString, description: string) => z.array(entry).min(LIST_ENTRIES.min).max(LIST_ENTRIES.max).describe(description);
const text = z.string().min(1).max(ENTRY_MAX);
const methods = entries(z.string().regex(METHOD, "must be an upper-case HTTP method"), "Upper-case HTTP methods.");
const paths = entries(text, "Platform paths where * matches one segment and ** any number of segments.");

const restrictions = z
  .object({
    ips: entries(text, "IPv4 or IPv6 addresses or CIDRs.").optional(),
    referrers: entries(text, "http(s) URLs matched part by part: the scheme, the host (a * label for one or more whole labels), the port, then the path (* for any run of characters); or * for any referrer.").optional(),
    methods: methods.optional(),
    paths: paths.optional(),
  })
  .describe("A request passes when it matches every kind given, and within a kind one of its entries.");

const ratelimit = z.object({
  name: z.string().regex(RATELIMIT_NAME, "must be 1-64 characters of A-Za-z0-9._-").describe("Unique within the policy."),
  limit: whole(RATELIMIT_LIMIT).describe("Requests (their costs added up) a window admits."),
  windowSeconds: whole(WINDOW_SECONDS).describe("The window's length; windows start at each multiple of it since 1970-01-01T00:00:00Z."),
  methods: methods.optional().describe("Count only requests of these methods (default: every request)."),
  paths: paths.optional().describe("Count only requests on these paths (default: every request)."),
});

const credits = z
  .object({
    remaining: whole64(CREDITS_REMAINING).describe("The balance the key starts with: set again only when this field changes, never for credits spent."),
    refill: z
      .object({
        amount: whole64(REFILL_AMOUNT).describe("What the balance is set to at each refill (it is not added)."),
        interval: z.enum(["daily", "monthly"]).describe("daily: at 00:00 UTC; monthly: at 00:00 UTC on day."),
        day: whole(REFILL_DAY).optional().describe("The day of a monthly refill (default 1); a shorter month's last day."),
      })
      .optional(),
  })
  .describe("A balance each verification charges.");

export const policySpecSchema = z
  .object({
    restrictions: restrictions.optional(),
    ratelimits: z
      .array(ratelimit)
      .max(RATELIMITS_MAX)
      // A map list keyed by name: the API server itself refuses two limits of one name.
      .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] })
      .optional()
      .describe("Fixed-window rate limits, names unique within the policy."),
    credits: credits.optional(),
    leakPolicy: z.enum(LEAK_POLICIES).optional().describe("What a leak report does to the key: disable, rotate or notify (docs/leaks.md)."),
  })
  .superRefine((policy, ctx) => {
    const compiled = compilePolicy(policy);
    if (!compiled.ok) ctx.addIssue({ code: "custom", message: compiled.reason });
    else if (untextual(policy) !== undefined) ctx.addIssue({ code: "custom", message: `an entry ${TEXT_RULE}` });
  })
  .describe("The key's own policy (docs/api.md, \"Key policy\"); kept as said here, like every other field.");

/** Whether putting back `wanted` over `stored` sets the balance again: only when `credits.remaining` differs. */
export function resetsBalance(stored: Policy | null, wanted: Policy | null): boolean {
  return stored?.credits?.remaining !== wanted?.credits?.remaining;
}

/** The first string in a policy that PostgreSQL could not store as the API gave it (a NUL, a lone surrogate). */
function untextual(value: unknown): string | undefined {
  if (typeof value === "string") return isText(value) ? undefined : value;
  if (typeof value !== "object" || value === null) return undefined;
  for (const child of Object.values(value)) {
    const found = untextual(child);
    if (found !== undefined) return found;
  }
  return undefined;
}
