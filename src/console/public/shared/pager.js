// @ts-check
import { h } from "./dom.js";
import { fail } from "./notice.js";

// A list read a page at a time (GET, then the page its Link rel="next" names: api.js), a table row an
// item: the keys, the webhooks, the scope's events and a webhook's deliveries.

/**
 * @typedef {object} Pager
 * @property {HTMLButtonElement} more reads the next page; hidden while there is none
 * @property {(path: string) => Promise<HTMLElement[]>} load reads a page and appends its rows, which it returns
 * @property {() => number} count how many rows all the pages read so far have added
 */

/**
 * @param {object} list
 * @param {string} list.label what `more` says: "Show more keys"
 * @param {(path: string) => Promise<import("./api.js").Answer>} list.get
 * @param {HTMLElement} list.tbody where the rows go
 * @param {(item: any) => HTMLElement} list.row
 * @param {(row: HTMLElement) => void} list.focus where the keyboard goes in the first row `more` adds, so it lands on what is new
 * @returns {Pager}
 */
export function pager({ label, get, tbody, row, focus }) {
  const more = h("button", { type: "button", class: "more", hidden: true }, label);
  let next = /** @type {string | null} */ (null);
  let count = 0;
  /** @param {string} path */
  const load = async (path) => {
    const page = await get(path);
    next = page.next;
    more.hidden = !next;
    const rows = page.body.map(row);
    tbody.append(...rows);
    count += rows.length;
    return rows;
  };
  more.addEventListener("click", async () => {
    if (!next) return;
    try {
      const [first] = await load(next);
      if (first) focus(first);
    } catch (error) {
      fail(error);
    }
  });
  return { more, load, count: () => count };
}
