// @ts-check
// The events room: the scope's events, and the table of events that one key's page shows too. It uses
// shared/; no other room.
import { call } from "../shared/api.js";
import { fill, focusHeading, focusRowHeading, h } from "../shared/dom.js";
import { actorOf, changesOf, when } from "../shared/format.js";
import { fail } from "../shared/notice.js";
import { pager } from "../shared/pager.js";

// Events (docs/api.md, "Events"): every change to a key, who made it and what it changed. The scope's
// are read newest first, a page at a time (GET /events, Link rel="next"); one key's, oldest first.

const PAGE = 25;
const ACTIONS = ["created", "updated", "rotated", "deleted", "expired"];

/**
 * A table of events, its rows added by the caller as the events arrive.
 * @param {string} id
 * @param {string} caption
 * @param {boolean} withKey a column for the key (the scope's events); one key's events leave it out
 */
export function eventsTable(id, caption, withKey) {
  const tbody = h("tbody");
  const columns = ["When", "What", ...(withKey ? ["Key"] : []), "By", "Changes"];
  const table = h("table", { id },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
    tbody);
  /** @param {any} event */
  const row = (event) => h("tr", {},
    h("td", {}, when(event.at)),
    h("th", { scope: "row" }, event.action),
    withKey ? h("td", {}, h("a", { href: `#/key/${event.key.id}` }, event.key.name), ` #${event.key.id}`) : null,
    h("td", {}, actorOf(event.actor)),
    h("td", {}, ...changesOf(event.changes).flatMap((line, i) => (i ? [h("br"), line] : [line]))));
  const empty = () => tbody.append(h("tr", {}, h("td", { colspan: columns.length }, "No events.")));
  return { table, tbody, row, empty };
}

/**
 * @param {HTMLElement} view
 * @param {string} [action] only events of this action
 */
export async function showEvents(view, action = "") {
  const heading = h("h1", { id: "events-title" }, "Events");
  const filter = h("select", { id: "events-action" }, h("option", { value: "" }, "Every action"), ...ACTIONS.map((a) => h("option", { value: a }, a)));
  filter.value = action;
  const show = h("button", { type: "button" }, "Show");
  show.addEventListener("click", () => void showEvents(view, filter.value));
  const { table, tbody, row, empty } = eventsTable("events", "Changes to the keys you may manage, newest first.", true);
  const list = pager({ label: "Show older events", get: (path) => call("GET", path), tbody, row, focus: focusRowHeading });
  fill(view,
    h("div", { class: "view-head" }, heading),
    h("p", { class: "lede" }, "Every change to a key you may manage: who made it, and what it changed."),
    h("div", { class: "inline-field" }, h("div", {}, h("label", { for: "events-action" }, "Action"), filter), show),
    h("div", { class: "table-wrap", role: "region", "aria-labelledby": "events-title", tabindex: 0 }, table),
    list.more);
  focusHeading(heading);
  try {
    const rows = await list.load(`/events?limit=${PAGE}${action ? `&action=${encodeURIComponent(action)}` : ""}`);
    if (!rows.length) empty();
  } catch (error) {
    fail(error);
  }
}
