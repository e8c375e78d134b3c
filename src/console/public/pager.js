// @ts-check
import { fail } from "./notice.js";

/**
 * A list read a page at a time (Link rel="next", api.js): `load(path)` reads a page with `get`, adds
 * its items with `add` (which returns the rows it made) and shows `more` while there is a next page;
 * `more` reads that page and hands its first row to `focus`, so the keyboard lands on what is new.
 * @param {HTMLElement} more
 * @param {(path: string) => Promise<import("./api.js").Answer>} get
 * @param {(items: any[]) => Element[]} add
 * @param {(row: Element) => void} focus
 * @returns {(path: string) => Promise<Element[]>} load
 */
export function pager(more, get, add, focus) {
  let next = /** @type {string | null} */ (null);
  /** @param {string} path */
  const load = async (path) => {
    const page = await get(path);
    next = page.next;
    more.hidden = !next;
    return add(page.body);
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
  return load;
}
