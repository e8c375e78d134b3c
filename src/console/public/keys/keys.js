// @ts-check
// The keys room: the keys view, one key's page, what can be done to a key, and its policy and usage in
// words. It uses shared/ and, for a key's events and charts, events/ and analytics/; no other room.
import { call } from "../shared/api.js";
import { fill, focusHeading, h, hidden, renderAgain } from "../shared/dom.js";
import { levelOf, scopeOf, when } from "../shared/format.js";
import { createKey, deleteKey, renameKey, rotateKey, toggleKey } from "./key-actions.js";
import { fail, signOut } from "../shared/notice.js";
import { pager } from "../shared/pager.js";
import { policySummary } from "./policy.js";

// The keys view: every live key the signed-in key may manage (GET /keys, paged), and what can be done
// to each.

const PAGE = 50;

/** @typedef {import("../shared/session.js").Session} Session */

/**
 * A key's status, as a badge.
 * @param {any} key
 */
export function status(key) {
  if (key.replacedBy !== null) return h("span", { class: "badge ending" }, "Replaced");
  return key.active ? h("span", { class: "badge on" }, "Active") : h("span", { class: "badge off" }, "Disabled");
}

/**
 * The buttons that act on a key; `changed` runs after each change that took.
 * @param {any} key
 * @param {Session} session
 * @param {() => void} changed
 */
export function actionButtons(key, session, changed) {
  const self = key.id === session.me.id;
  /**
   * @param {string} action
   * @param {string} label
   * @param {() => Promise<boolean>} run
   * @param {string} [tone]
   */
  const button = (action, label, run, tone = "") => h("button", {
    type: "button", class: `small ${tone}`.trim(), "data-focus": `${action}-${key.id}`,
    onclick: async () => {
      if (!(await run())) return;
      if (self && (action === "delete" || (action === "toggle" && key.active))) {
        return signOut(`You ${action === "delete" ? "deleted" : "disabled"} the key you were signed in with, so the console signed out.`);
      }
      changed();
    },
  }, label, hidden(` “${key.name}”`));
  return [
    button("rename", "Rename", () => renameKey(key)),
    button("toggle", key.active ? "Disable" : "Enable", () => toggleKey(key, self)),
    key.replacedBy === null ? button("rotate", "Rotate", () => rotateKey(key, self, session.continueWith)) : null,
    button("delete", "Delete", () => deleteKey(key, self), "danger"),
  ];
}

/**
 * @param {HTMLElement} view
 * @param {Session} session
 * @param {number} [shown] how many keys to read at once: as many as were shown before a reload
 */
export async function showKeys(view, session, shown = PAGE) {
  const { me } = session;
  const heading = h("h1", { id: "keys-title" }, "Keys");
  const tbody = h("tbody");
  const reload = () => renderAgain(view, () => showKeys(view, session, Math.max(PAGE, list.count())));
  const list = pager({
    label: "Show more keys", get: (path) => call("GET", path), tbody,
    row: (key) => row(key, session, reload), focus: (first) => first.querySelector("a")?.focus(),
  });

  const create = h("button", { type: "button", class: "primary", "data-focus": "create", onclick: async () => { if (await createKey()) reload(); } }, "Create key");
  const table = h("table", {},
    h("caption", {}, "Live keys, oldest first. A key's name opens its details, events and usage."),
    h("thead", {}, h("tr", {}, ...["Name", "Type", "Scope", "Status", "Expires", "Last used", "Policy"].map((t) => h("th", { scope: "col" }, t)),
      h("th", { scope: "col" }, hidden("Actions")))),
    tbody);
  fill(view,
    h("div", { class: "view-head" }, heading, create),
    h("p", { class: "lede" }, `The keys that “${me.name}” may manage, in ${scopeOf(me)} and below.`),
    h("div", { class: "table-wrap", role: "region", "aria-labelledby": "keys-title", tabindex: 0 }, table),
    list.more);
  focusHeading(heading);
  try {
    const rows = await list.load(`/keys?limit=${Math.min(1000, shown)}`);
    if (!rows.length) tbody.append(h("tr", {}, h("td", { colspan: 8 }, "No keys.")));
  } catch (error) {
    fail(error);
  }
}

/**
 * @param {any} key
 * @param {Session} session
 * @param {() => void} changed
 */
function row(key, session, changed) {
  delete key.keyId;
  const self = key.id === session.me.id;
  return h("tr", {},
    h("th", { scope: "row" }, h("a", { href: `#/key/${key.id}` }, key.name), self ? h("span", { class: "you" }, " (you)") : null),
    h("td", {}, key.type),
    h("td", {}, scopeOf(key), h("br"), h("span", { class: "muted" }, `${levelOf(key)} level`)),
    h("td", {}, status(key)),
    h("td", {}, when(key.expiresAt)),
    h("td", {}, when(key.lastUsedAt)),
    h("td", { class: "policy" }, policySummary(key.policy)),
    h("td", {}, h("div", { class: "row-actions" }, ...actionButtons(key, session, changed))));
}
