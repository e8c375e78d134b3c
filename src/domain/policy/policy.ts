// policy/ of domain/: a policy and its compiled form (here), its restrictions (restrictions/: addresses,
// referrers, methods, paths) and limits (limits/: rate-limit windows, credits, refills). It may use scope/.

import type { Level } from "../scope/scope.ts";

// A policy, on a key or on a directory entity (docs/api.md, "Key policy"): from where a key may be used
// (restrictions), how fast (rate limits) and how much (credits), and what happens to a key reported
// leaked (docs/leaks.md). Every part is optional.

export interface Policy {
  restrictions?: Restrictions | undefined;
  ratelimits?: readonly RateLimit[] | undefined;
  credits?: Credits | undefined;
  /** What a leak report does to a live key: the nearest one set binds, not the strictest (domain/leaks/leak-policy.ts). */
  leakPolicy?: LeakPolicy | undefined;
}

/** disable: the key is disabled; rotate: rotated, the old token retired; notify: only the `leaked` event. */
export const LEAK_POLICIES = ["disable", "rotate", "notify"] as const;
export type LeakPolicy = (typeof LEAK_POLICIES)[number];

/** Each kind given must match the request, by one of its entries. */
export interface Restrictions {
  /** IPv4/IPv6 addresses or CIDRs. */
  ips?: readonly string[] | undefined;
  /** http(s) URL patterns matched part by part (referrer.ts), or `*`. */
  referrers?: readonly string[] | undefined;
  /** Upper-case HTTP methods. */
  methods?: readonly string[] | undefined;
  /** Platform paths where `*` matches one segment and `**` any number of them. */
  paths?: readonly string[] | undefined;
}

export interface RateLimit {
  name: string;
  limit: number;
  windowSeconds: number;
  /** Which requests it counts; every request when neither is given. */
  methods?: readonly string[] | undefined;
  paths?: readonly string[] | undefined;
}

export interface Credits {
  remaining: number;
  refill?: Refill | undefined;
}

/** A refill sets the balance to `amount`; it does not add. */
export interface Refill {
  amount: number;
  interval: "daily" | "monthly";
  /** Day of the month for a monthly refill, 1-31 (default 1); the last day of a shorter month. */
  day?: number | undefined;
}

/** Who holds a policy: the key itself, or one of the entities it lies in. */
export type PolicyLevel = "key" | Level;

/** A value parsed from user input, or why it cannot be (for a 400's message). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

// The bounds of a policy's fields, one place for the schemas and the checks.
export const LIST_ENTRIES = { min: 1, max: 100 } as const;
export const RATELIMITS_MAX = 10;
export const RATELIMIT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
export const RATELIMIT_LIMIT = { min: 1, max: 1_000_000_000 } as const;
export const WINDOW_SECONDS = { min: 1, max: 2_592_000 } as const; // a second to thirty days
export const CREDITS_REMAINING = { min: 0, max: 1_000_000_000_000 } as const;
export const REFILL_AMOUNT = { min: 1, max: 1_000_000_000_000 } as const;
export const REFILL_DAY = { min: 1, max: 31 } as const;
export const COST = { min: 0, max: 1000, default: 1 } as const;
/** An upper-case HTTP method (RFC 9110's token, upper-case letters and the punctuation methods use). */
export const METHOD = /^[A-Z][A-Z0-9_-]{0,31}$/;
