// @ts-check
// The analytics room: how keys were used over time (docs/api.md, "Analytics"): the charts of one key's
// page, and the scope's page with its most used keys. It uses shared/; no other room.
import { call, keyPath } from "../shared/api.js";
import { fill, focusHeading, h } from "../shared/dom.js";
import { number } from "../shared/format.js";
import { fail } from "../shared/notice.js";
import { legend, OUTCOMES, usageChart } from "./chart.js";

// Every chart draws from the REST answer, like any client: the last 24 hours by hour (the API's default
// range, 25 buckets with the current hour) and the last 30 days by day.

/** The start of the 30 days that end with today (UTC), as the API takes it. */
function thirtyDaysAgo(now = new Date()) {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 29)).toISOString();
}

/**
 * Both charts of `path` (a key's analytics, or /analytics), read at once.
 * @param {string} path
 * @param {string} id
 * @param {string} [extra] more of the query for the days
 */
async function charts(path, id, extra = "") {
  const [hours, days] = await Promise.all([call("GET", path), call("GET", `${path}?interval=day&from=${encodeURIComponent(thirtyDaysAgo())}${extra}`)]);
  return {
    days: days.body,
    figures: [
      usageChart({ id: `${id}-hours`, title: "The last 24 hours", interval: "hour", buckets: hours.body.buckets }),
      usageChart({ id: `${id}-days`, title: "The last 30 days", interval: "day", buckets: days.body.buckets }),
    ],
  };
}

/**
 * A key's "Usage over time" section, filled once read.
 * @param {number} id
 */
export function keyAnalyticsSection(id) {
  const body = h("div", {}, h("p", { class: "muted" }, "Reading how this key was used…"));
  const section = h("section", { "aria-labelledby": "analytics-title" },
    h("h2", { id: "analytics-title" }, "Usage over time"),
    h("p", { class: "hint" }, "Every answer keyplane gave this key on /verify and /auth, by outcome (a rotated key's history goes on under its new key; counts arrive within 10 seconds)."),
    body);
  charts(keyPath(id, "/analytics"), "key").then(({ figures }) => fill(body, legend(), ...figures), (error) => {
    fill(body, h("p", {}, "Its usage could not be read."));
    fail(error);
  });
  return section;
}

/**
 * The scope's page: its keys' verdicts summed over time, and the keys used most in the last 30 days.
 * @param {HTMLElement} view
 */
export async function showAnalytics(view) {
  const heading = h("h1", {}, "Analytics");
  const body = h("div", {}, h("p", { class: "muted" }, "Reading…"));
  fill(view, heading,
    h("p", { class: "lede" }, "What keyplane answered on /verify and /auth for every key you may manage, deleted and expired ones included."),
    body);
  focusHeading(heading);
  const { figures, days } = await charts("/analytics", "scope", "&top=10");
  fill(body, legend(), ...figures, h("h2", { id: "top-title" }, "Most used keys, last 30 days"), topTable(days.top));
}

/** @param {any[]} top */
function topTable(top) {
  if (top.length === 0) return h("p", {}, "No key was used in the last 30 days.");
  return h("div", { class: "table-wrap", role: "region", "aria-labelledby": "top-title", tabindex: 0 },
    h("table", {},
      h("caption", {}, "The keys with the most requests, most first."),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Key"), h("th", { scope: "col" }, "Requests"), ...OUTCOMES.map(([, name]) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, ...top.map((k) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/key/${k.id}` }, k.name)), h("td", {}, number(k.requests)), ...OUTCOMES.map(([o]) => h("td", {}, number(k[o]))))))));
}
