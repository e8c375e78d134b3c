// @ts-check
import { h } from "./dom.js";

// How the API's fields read to a person: times in the reader's own zone with how long ago or ahead,
// scopes by their names, actors and changes in words.

const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const NUMBER = new Intl.NumberFormat();

const UNITS = /** @type {const} */ ([
  ["year", 365 * 24 * 3600], ["month", 30 * 24 * 3600], ["week", 7 * 24 * 3600], ["day", 24 * 3600], ["hour", 3600], ["minute", 60], ["second", 1],
]);

/**
 * "in 59 minutes", "3 days ago".
 * @param {Date} at
 * @param {Date} now
 */
export function relative(at, now = new Date()) {
  const seconds = Math.round((at.getTime() - now.getTime()) / 1000);
  // The largest unit the time nearly fills: 59 minutes 59 seconds from now is "in 1 hour", not "in 60 minutes".
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size * 0.95 || unit === "second") return RELATIVE.format(Math.round(seconds / size), unit);
  }
  return "";
}

/**
 * A time as a <time> element: the date and time, then how far from now; `never` when there is none.
 * @param {string | null | undefined} iso
 * @param {string} never
 */
export function when(iso, never = "never") {
  if (!iso) return h("span", { class: "muted" }, never);
  const at = new Date(iso);
  return h("time", { datetime: iso, title: at.toISOString() }, DATE_TIME.format(at), h("span", { class: "ago" }, ` (${relative(at)})`));
}

/** @param {string} iso */
export function dateTime(iso) {
  return DATE_TIME.format(new Date(iso));
}

/** @param {number} n */
export function number(n) {
  return NUMBER.format(n);
}

/**
 * "acme › sip.acme.example › ivr": the names of the entities a key lies in, from the customer down.
 * @param {any} key a key as the API shows it
 */
export function scopeOf(key) {
  const parts = [key.tenant?.name];
  if (key.domain) parts.push(key.domain.domain);
  if (key.application) parts.push(key.application.name);
  if (key.subscriber) parts.push(key.subscriber.msisdn);
  if (key.user) parts.push(key.user.email);
  return parts.filter(Boolean).join(" › ");
}

/** @param {any} key */
export function levelOf(key) {
  if (key.user) return "user";
  if (key.subscriber) return "subscriber";
  if (key.application) return "application";
  if (key.domain) return "domain";
  return "customer";
}

/**
 * Who made a change (docs/api.md, "Events").
 * @param {any} actor
 */
export function actorOf(actor) {
  switch (actor?.type) {
    case "key": return `key “${actor.name}” (#${actor.id})`;
    case "admin": return "the platform's admin";
    case "operator": return `the Kubernetes operator, for ApiKey ${actor.apiKey}`;
    case "runtime": return "the voice-application runtime";
    case "system": return "keyplane";
    case "scanner": return `the leak scanner ${actor.name ?? ""}`.trim();
    case "import": return "an import of keys";
    default: return "unknown";
  }
}

/**
 * An event's changes, one line each: "name “a” → “b”", "disabled", "credits 10,000 → 9,950"; a
 * `leaked` event's `leak` is where the token was found, not a before and after.
 * @param {Record<string, unknown>} changes
 */
export function changesOf(changes) {
  return Object.entries(changes ?? {}).map(([field, change]) => {
    if (!Array.isArray(change)) return field === "leak" ? leakOf(change) : `${field} ${shown(change)}`;
    const [before, after] = change;
    switch (field) {
      case "active": return before === null ? (after ? "active" : "created disabled") : after ? "enabled" : "disabled";
      case "replacedBy": return `replaced by key #${String(after)}`;
      case "policy": return after === null ? "policy removed" : before === null ? "policy set" : "policy changed";
      case "deletedAt": return "deleted";
      case "expiresAt": return after ? `expires ${dateTime(String(after))}` : "no longer expires";
      default: return before === null || before === undefined ? `${field} ${shown(after)}` : `${field} ${shown(before)} → ${shown(after)}`;
    }
  });
}

/** @param {any} leak */
function leakOf(leak) {
  const where = [leak?.source, leak?.url].filter((v) => typeof v === "string" && v !== "");
  return where.length ? `leaked: found in ${where.join(" at ")}` : "leaked";
}

/** @param {unknown} value */
function shown(value) {
  if (value === null || value === undefined) return "none";
  if (typeof value === "string") return `“${value}”`;
  if (typeof value === "number") return number(value);
  return JSON.stringify(value);
}
