// @ts-check
import { h } from "../shared/dom.js";
import { number, when } from "../shared/format.js";

// A policy (docs/api.md, "Key policy") in words: where a key may be used from, how fast, how much.

const RESTRICTIONS = /** @type {const} */ ([
  ["ips", "From addresses"], ["referrers", "From pages"], ["methods", "Methods"], ["paths", "Paths"],
]);

/**
 * "2 restrictions · 1 rate limit · 9,950 credits": a line for the keys table.
 * @param {any} policy
 */
export function policySummary(policy) {
  if (!policy) return "None";
  const parts = [];
  const restrictions = RESTRICTIONS.filter(([kind]) => policy.restrictions?.[kind]).length;
  if (restrictions) parts.push(`${restrictions} ${restrictions === 1 ? "restriction" : "restrictions"}`);
  const limits = policy.ratelimits?.length ?? 0;
  if (limits) parts.push(`${limits} ${limits === 1 ? "rate limit" : "rate limits"}`);
  if (policy.credits) parts.push(`${number(policy.credits.remaining)} credits`);
  return parts.length ? parts.join(" · ") : "Set, with nothing in it";
}

/**
 * @param {number} seconds
 */
export function period(seconds) {
  const units = /** @type {const} */ ([[86400, "day"], [3600, "hour"], [60, "minute"], [1, "second"]]);
  for (const [size, unit] of units) {
    if (seconds % size === 0) {
      const n = seconds / size;
      return n === 1 ? `1 ${unit}` : `${number(n)} ${unit}s`;
    }
  }
  return `${seconds} seconds`;
}

/**
 * @param {any} refill
 */
function refillWords(refill) {
  const day = refill.interval === "monthly" ? ` on day ${refill.day ?? 1} of each month` : " each day";
  return `set back to ${number(refill.amount)}${day}, at 00:00 UTC`;
}

/**
 * A policy's parts; `credits` is the live balance and next refill, when they were read.
 * @param {any} policy
 * @param {{ remaining: number, nextRefillAt: string | null } | null} [credits]
 */
export function policyView(policy, credits = null) {
  if (!policy) return [h("p", { class: "muted" }, "None.")];
  const restrictions = RESTRICTIONS.filter(([kind]) => policy.restrictions?.[kind]);
  const parts = [];
  if (restrictions.length) {
    parts.push(h("h4", {}, "Restrictions"),
      h("ul", { class: "plain" }, ...restrictions.map(([kind, label]) => h("li", {}, `${label}: `, ...list(policy.restrictions[kind])))));
  }
  if (policy.ratelimits?.length) {
    parts.push(h("h4", {}, "Rate limits"),
      h("ul", { class: "plain" }, ...policy.ratelimits.map((/** @type {any} */ limit) => h("li", {},
        h("strong", {}, limit.name), `: ${number(limit.limit)} ${limit.limit === 1 ? "request" : "requests"} per ${period(limit.windowSeconds)}`,
        limit.methods ? `, ${limit.methods.join(", ")} only` : "",
        limit.paths ? [", on ", ...list(limit.paths)] : "",
      ))));
  }
  if (policy.credits) {
    const balance = credits ?? { remaining: policy.credits.remaining, nextRefillAt: null };
    parts.push(h("h4", {}, "Credits"),
      h("p", {}, h("strong", {}, number(balance.remaining)), ` ${balance.remaining === 1 ? "credit" : "credits"} left`,
        policy.credits.refill ? `; ${refillWords(policy.credits.refill)}` : "; never refilled"),
      policy.credits.refill && credits ? h("p", {}, "Next refill: ", when(credits.nextRefillAt, "none")) : null);
  }
  if (!parts.length) parts.push(h("p", { class: "muted" }, "Set, with nothing in it."));
  return parts;
}

/** @param {string[]} items */
function list(items) {
  return items.flatMap((item, i) => [i ? ", " : "", h("code", {}, item)]);
}
