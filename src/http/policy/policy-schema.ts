import { z } from "zod";
import { compilePolicy } from "../../domain/policy/compile.ts";
import {
  CREDITS_REMAINING, LEAK_POLICIES, LIST_ENTRIES, METHOD, RATELIMIT_LIMIT, RATELIMIT_NAME, RATELIMITS_MAX, REFILL_AMOUNT, REFILL_DAY, WINDOW_SECONDS,
  type Policy,
} from "../../domain/policy/policy.ts";
import { IP_ENTRY, PATH_ENTRY, REFERRER_ENTRY } from "../../domain/policy/restrictions/entry-patterns.ts";
import { TEXT, TEXT_RULE } from "../../domain/text.ts";

// A policy (docs/api.md, "Key policy"), as requests give it and answers show it. The schema states
// what a schema can (types, bounds, patterns, no unknown field), so that /openapi.json says it: the
// entries of `ips`, `referrers` and `paths` by the domain's patterns of them (entry-patterns.ts, held
// to the parsers by its test). The rest (names unique within the policy) is the domain's
// compilePolicy, run as the refinement, so every rule it knows is a 400 with its reason.

/** How long one entry of a list may be, in characters: room for a long URL, and a bound for the store. */
export const ENTRY_MAX = 2048;

const whole = (field: string, { min, max }: { min: number; max: number }) =>
  z.number({ error: `${field} must be a number` }).int(`${field} must be a whole number`)
    .min(min, `${field} must be at least ${min}`).max(max, `${field} must be at most ${max}`);

const entries = (entry: z.ZodString, description: string) =>
  z.array(entry).min(LIST_ENTRIES.min, `must have at least ${LIST_ENTRIES.min} entry`).max(LIST_ENTRIES.max, `must have at most ${LIST_ENTRIES.max} entries`)
    .describe(description);

const text = z.string().regex(TEXT, TEXT_RULE).max(ENTRY_MAX, `must be at most ${ENTRY_MAX} characters`);
const method = z.string().regex(METHOD, "must be an upper-case HTTP method (GET, POST, ...)");
const methods = entries(method, "Upper-case HTTP methods.");
const path = text.regex(PATH_ENTRY, "must be a path starting with /, with * and ** only as whole segments, no . or .. segment, " +
  "no query or fragment, and each % the start of a percent-encoded UTF-8 character");
const paths = entries(path, "Platform paths where `*` matches one segment and `**` any number of segments (`/customers/*/calls/**`).");
const ip = text.regex(IP_ENTRY, "must be an IPv4 or IPv6 address or CIDR (a prefix length of 0-32 or 0-128), without a zone");
const referrer = text.regex(REFERRER_ENTRY, "must be a URL (https://...), or start with *, without spaces or control characters");

const restrictions = z.strictObject({
  ips: entries(ip, "IPv4 or IPv6 addresses or CIDRs (`203.0.113.0/24`, `2001:db8::/32`).").optional(),
  referrers: entries(referrer, "http(s) URLs matched part by part: the scheme, the host (a `*` label for one or more whole labels: `https://*.acme.example/*`), the port, then the path (`*` for any run of characters); or `*` for any referrer.").optional(),
  methods: methods.optional(),
  paths: paths.optional(),
}).describe("A request passes when it matches every kind given, and within a kind one of its entries.");

const ratelimit = z.strictObject({
  name: z.string().regex(RATELIMIT_NAME, "name must be 1-64 characters of A-Za-z0-9._-").describe("Unique within the policy."),
  limit: whole("limit", RATELIMIT_LIMIT).describe("Requests (their costs added up) a window admits."),
  windowSeconds: whole("windowSeconds", WINDOW_SECONDS)
    .describe("The window's length; windows start at each multiple of it since 1970-01-01T00:00:00Z."),
  methods: methods.optional().describe("Count only requests of these methods (default: every request)."),
  paths: paths.optional().describe("Count only requests on these paths (default: every request)."),
});

const refill = z.strictObject({
  amount: whole("amount", REFILL_AMOUNT).describe("What the balance is set to at each refill (it is not added)."),
  interval: z.enum(["daily", "monthly"]).describe("daily: at 00:00 UTC; monthly: at 00:00 UTC on `day`."),
  day: whole("day", REFILL_DAY).optional().describe("The day of a monthly refill (default 1); a shorter month's last day."),
});

const credits = z.strictObject({
  remaining: whole("remaining", CREDITS_REMAINING).describe("The balance; in an answer, the live balance."),
  refill: refill.optional(),
});

export const policyObject: z.ZodType<Policy> = z.strictObject({
  restrictions: restrictions.optional(),
  ratelimits: z.array(ratelimit).max(RATELIMITS_MAX, `must have at most ${RATELIMITS_MAX} entries`).optional()
    .describe("Names unique within the policy."),
  credits: credits.optional(),
  leakPolicy: z.enum(LEAK_POLICIES).optional()
    .describe("What a leak report (docs/leaks.md) does to a live key this policy binds: disable it, rotate it (the old token retired after " +
      "KEYPLANE_LEAK_GRACE_SECONDS) or only record the `leaked` event. The nearest policy that sets it decides, the key's own first; " +
      "unlike the other parts, an entity's does not bind the keys below it against a looser one. Unset everywhere: KEYPLANE_LEAK_POLICY."),
}).superRefine((policy, ctx) => {
  const compiled = compilePolicy(policy);
  if (!compiled.ok) ctx.addIssue({ code: "custom", message: compiled.reason });
}).describe("A policy (docs/api.md, \"Key policy\"): every part optional; a PUT replaces the whole policy.");
