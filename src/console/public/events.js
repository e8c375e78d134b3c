// @ts-check
/* global HTMLElement */
import { call } from "./api.js";
import { fill, focusHeading, h } from "./dom.js";
import { actorOf, changesOf, when } from "./format.js";
import { fail } from "./notice.js";

// Events (docs/api.md, "Events"): every change to a key, who made it and what it changed. The scope's
// are read newest first, a page at a time (GET /events, Link rel="next"); one key's, oldest first.

const PAGE = 25;
const ACTIONS = ["created", "updated", "rotated", "deleted", "expired"];

/**
 * A table of events, with rows added as pages arrive.
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
  /** @param {any[]} events */
  const add = (events) => {
    const rows = events.map((event) => h("tr", {},
      h("td", {}, when(event.at)),
      h("th", { scope: "row" }, event.action),
      withKey ? h("td", {}, h("a", { href: `#/key/${event.key.id}` }, event.key.name), ` #${event.key.id}`) : null,
      h("td", {}, actorOf(event.actor)),
      h("td", {}, ...changesOf(event.changes).flatMap((line, i) => (i ? [h("br"), line] : [line])))));
    tbody.append(...rows);
    return rows;
  };
  const empty = () => tbody.append(h("tr", {}, h("td", { colspan: columns.length }, "No events.")));
  return { table, add, empty };
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
  const { table, add, empty } = eventsTable("events", "Changes to the keys you may manage, newest first.", true);
  const more = h("button", { type: "button", class: "more", hidden: true }, "Show older events");
  let next = /** @type {string | null} */ (null);
  /** @param {string} path */
  const load = async (path) => {
    const page = await call("GET", path);
    next = page.next;
    more.hidden = !next;
    return add(page.body);
  };
  more.addEventListener("click", async () => {
    if (!next) return;
    try {
      const [first] = await load(next);
      const cell = first?.querySelector("th");
      if (cell instanceof HTMLElement) focusHeading(cell);
    } catch (error) {
      fail(error);
    }
  });
  fill(view,
    h("div", { class: "view-head" }, heading),
    h("p", { class: "lede" }, "Every change to a key you may manage: who made it, and what it changed."),
    h("div", { class: "inline-field" }, h("div", {}, h("label", { for: "events-action" }, "Action"), filter), show),
    h("div", { class: "table-wrap", role: "region", "aria-labelledby": "events-title", tabindex: 0 }, table),
    more);
  focusHeading(heading);
  try {
    const rows = await load(`/events?limit=${PAGE}${action ? `&action=${encodeURIComponent(action)}` : ""}`);
    if (!rows.length) empty();
  } catch (error) {
    fail(error);
  }
}
