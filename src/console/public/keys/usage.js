// @ts-check
import { call, keyPath } from "../shared/api.js";
import { fill, h, hidden } from "../shared/dom.js";
import { number, when } from "../shared/format.js";
import { announce, fail } from "../shared/notice.js";
import { period } from "./policy.js";

// What a key has used of what binds it, now (GET {base}/{key-id}/usage, docs/api.md "Key policy"):
// each rate limit's current window, at whatever level it is set, and the nearest balance of credits.
// Reading it charges nothing, so the view reads it again whenever asked.

/**
 * @typedef {object} Usage
 * @property {{ name: string, scope: string, limit: number, windowSeconds: number, remaining: number, reset: number }[]} ratelimits
 * @property {{ scope: string, remaining: number, nextRefillAt: string | null } | null} credits
 */

/**
 * "this key", "the domain sip.acme.example": who holds a limit or a balance, named from the key's own
 * entities (a key is bound only by its own policy and theirs).
 * @param {string} scope the level, as the usage answer gives it
 * @param {any} key
 */
export function holderOf(scope, key) {
  switch (scope) {
    case "key": return "this key";
    case "customer": return `the customer ${key.tenant?.name}`;
    case "domain": return `the domain ${key.domain?.domain}`;
    case "application": return `the application ${key.application?.name}`;
    case "subscriber": return `the subscriber ${key.subscriber?.msisdn}`;
    default: return scope;
  }
}

/**
 * The "Usage now" section of a key's view, filled with `usage` as read, and a button that reads it again.
 * @param {any} key
 * @param {Usage | null} usage null when it could not be read
 */
export function usageSection(key, usage) {
  const body = h("div", { id: "usage" });
  /** @param {Usage | null} read @param {number} at when it was read (ms), for when the windows end */
  const show = (read, at) => fill(body, ...(read ? usageParts(key, read, at) : [h("p", { class: "muted" }, "The usage could not be read.")]));
  const refresh = h("button", { type: "button", class: "small", onclick: async () => {
    try {
      show((await call("GET", keyPath(key.id, "/usage"))).body, Date.now());
      announce("Read the usage again.");
    } catch (error) {
      fail(error);
    }
  } }, "Refresh", hidden(" the usage"));
  show(usage, Date.now());
  return h("section", { "aria-labelledby": "usage-title" },
    h("div", { class: "section-head" }, h("h2", { id: "usage-title" }, "Usage now"), refresh),
    h("p", { class: "hint" }, "What is left of every rate limit that binds this key, and of its credits. Requests are counted by /verify and /auth. " +
      "keyplane's processes take small shares of a window ahead of use, so what is left may be a few requests short of the truth, never above it."),
    body);
}

/**
 * @param {any} key
 * @param {Usage} usage
 * @param {number} at
 */
function usageParts(key, usage, at) {
  const limits = usage.ratelimits.length
    ? h("div", { class: "table-wrap", role: "region", "aria-labelledby": "usage-limits", tabindex: 0 },
      h("table", {},
        h("caption", { id: "usage-limits" }, "Rate limits that bind this key; a limit set above the key is shared by every key inside its holder."),
        h("thead", {}, h("tr", {}, ...["Limit", "Set on", "Allows", "Left now", "Window resets"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, ...usage.ratelimits.map((limit) => h("tr", {},
          h("th", { scope: "row" }, limit.name),
          h("td", {}, holderOf(limit.scope, key)),
          h("td", {}, `${number(limit.limit)} ${limit.limit === 1 ? "request" : "requests"} per ${period(limit.windowSeconds)}`),
          h("td", { class: "left" }, h("strong", {}, number(limit.remaining)), ` of ${number(limit.limit)}`),
          h("td", {}, when(new Date(at + limit.reset * 1000).toISOString())))))))
    : h("p", {}, "No rate limit binds this key.");
  return [limits, creditsLine(key, usage.credits)];
}

/**
 * @param {any} key
 * @param {Usage["credits"]} credits
 */
function creditsLine(key, credits) {
  if (!credits) return h("p", { id: "usage-credits" }, "No credits bind this key: its requests are not charged.");
  const holder = credits.scope === "key" ? "on this key's own balance" : `on ${holderOf(credits.scope, key)}'s balance, shared by every key inside it`;
  return h("p", { id: "usage-credits" },
    h("strong", {}, number(credits.remaining)), ` ${credits.remaining === 1 ? "credit" : "credits"} left ${holder}. `,
    credits.nextRefillAt ? ["Next refill: ", when(credits.nextRefillAt)] : "It is never refilled.");
}
