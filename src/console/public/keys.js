// @ts-check
/* global document, HTMLElement */
import { call } from "./api.js";
import { fill, focusHeading, h, hidden } from "./dom.js";
import { levelOf, scopeOf, when } from "./format.js";
import { createKey, deleteKey, renameKey, rotateKey, toggleKey } from "./key-actions.js";
import { fail, signOut } from "./notice.js";
import { policySummary } from "./policy.js";

// The keys view: every live key the signed-in key may manage (GET /keys, paged), and what can be done
// to each.

const PAGE = 50;

/**
 * @typedef {object} Session
 * @property {any} me the signed-in key, without its token
 * @property {(token: string) => Promise<void>} continueWith carries on with a new token (the signed-in key was rotated)
 */

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
  const more = h("button", { type: "button", class: "more", hidden: true }, "Show more keys");
  let next = /** @type {string | null} */ (null);
  let count = 0;
  const reload = () => {
    // Focus goes back to the control that was used, in the list as it is now, where it still is.
    const used = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.focus : undefined;
    void showKeys(view, session, Math.max(PAGE, count)).then(() => {
      const again = used && view.querySelector(`[data-focus="${used}"]`);
      if (again instanceof HTMLElement) again.focus();
    });
  };

  /** @param {string} path */
  const load = async (path) => {
    const page = await call("GET", path);
    next = page.next;
    more.hidden = !next;
    const rows = page.body.map((/** @type {any} */ key) => row(key, session, reload));
    tbody.append(...rows);
    count += rows.length;
    return rows;
  };
  more.addEventListener("click", async () => {
    if (!next) return;
    try {
      const [first] = await load(next);
      first?.querySelector("a")?.focus();
    } catch (error) {
      fail(error);
    }
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
    more);
  focusHeading(heading);
  try {
    await load(`/keys?limit=${Math.min(1000, shown)}`);
    if (!count) tbody.append(h("tr", {}, h("td", { colspan: 8 }, "No keys.")));
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
