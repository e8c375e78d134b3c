// @ts-check
/* global document, HTMLElement */

// The page is built from elements and text nodes, never from HTML strings: nothing a key's name or
// an answer holds can become markup (and the CSP's Trusted Types rule would refuse it anyway).

/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined | ((event: any) => void)>} Attributes */

/**
 * An element: attributes by name (`true` for a bare one, `false`/null/undefined for none), listeners
 * as `on<event>` functions, then its children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attributes} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/**
 * @param {Element} parent
 * @param {(Child | Child[])[]} children
 */
export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(typeof child === "number" ? String(child) : child);
  }
}

/**
 * Replaces an element's children.
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function fill(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * The element of the page with this id.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

/**
 * Text for screen readers only, beside what sighted users see (which row a button acts on).
 * @param {string} text
 */
export function hidden(text) {
  return h("span", { class: "vh" }, text);
}

/**
 * Moves focus to a view's heading, so that keyboard and screen reader users start where it starts.
 * @param {HTMLElement} heading
 */
export function focusHeading(heading) {
  heading.setAttribute("tabindex", "-1");
  heading.focus();
}

/**
 * Moves focus to a table row's heading cell, as to a view's heading.
 * @param {Element} row
 */
export function focusRowHeading(row) {
  const cell = row.querySelector("th");
  if (cell instanceof HTMLElement) focusHeading(cell);
}

/**
 * Renders a view again with `render`, then focus goes back to the control that was used (by its
 * data-focus), in the view as it is now, where it still is.
 * @param {HTMLElement} view
 * @param {() => Promise<void>} render
 */
export function renderAgain(view, render) {
  const used = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.focus : undefined;
  void render().then(() => {
    const again = used && view.querySelector(`[data-focus="${used}"]`);
    if (again instanceof HTMLElement) again.focus();
  });
}
