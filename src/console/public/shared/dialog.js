// @ts-check
/* global document, HTMLElement */
import { h } from "./dom.js";
import { Refused } from "./api.js";
import { fail, inWordsOf } from "./notice.js";

// Modal dialogs on the native <dialog>: showModal() makes the page behind it inert and closes it on
// Escape; this adds what it leaves to the browser: Tab and Shift+Tab cycle within the dialog, focus goes
// back to the control that opened it, and the dialog is removed from the page once closed (so a token
// shown in one is gone with it).

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

/**
 * @typedef {object} DialogOptions
 * @property {string} title
 * @property {(Node | string)[]} [body] what the dialog says and asks
 * @property {string} [submit] the label of the button that acts; none: the dialog only informs
 * @property {string} [cancel] the label of the button that closes without acting
 * @property {boolean} [danger] the act cannot be undone
 * @property {boolean} [alert] an alertdialog: it asks to confirm something
 * @property {() => Promise<unknown>} [act] what submitting does; its error is shown in the dialog
 */

/**
 * Opens a dialog; resolves with what `act` returned, or undefined when it was closed without acting.
 * @param {DialogOptions} options
 * @returns {Promise<unknown>}
 */
export function openDialog({ title, body = [], submit, cancel = "Cancel", danger = false, alert = false, act }) {
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const id = `dialog-${Math.random().toString(36).slice(2)}`;
  const error = h("p", { class: "notice error", role: "alert" });
  const submitButton = submit ? h("button", { type: "submit", class: danger ? "danger primary" : "primary" }, submit) : null;
  const cancelButton = h("button", { type: "button", class: submit ? "" : "primary" }, submit ? cancel : "Close");
  const form = h("form", { method: "dialog", novalidate: true }, ...body, error, h("div", { class: "dialog-buttons" }, cancelButton, submitButton));
  const dialog = h("dialog", { "aria-labelledby": `${id}-title`, role: alert ? "alertdialog" : null },
    h("h2", { id: `${id}-title` }, title), form);

  return new Promise((resolve) => {
    /** @type {unknown} */
    let result;
    const close = () => dialog.close();
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (opener?.isConnected) opener.focus();
      resolve(result);
    });
    cancelButton.addEventListener("click", close);
    dialog.addEventListener("keydown", (event) => trapTab(dialog, event));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!act || !submitButton) return close();
      error.replaceChildren();
      submitButton.disabled = true;
      form.setAttribute("aria-busy", "true");
      try {
        result = await act();
        close();
      } catch (failure) {
        if (failure instanceof Refused && failure.signedOut) {
          close();
          return fail(failure);
        }
        error.textContent = inWordsOf(failure);
        submitButton.disabled = false;
        form.removeAttribute("aria-busy");
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    // Where something cannot be undone, focus starts on the way out, so that Enter alone does nothing harmful.
    const first = danger ? cancelButton : /** @type {HTMLElement | null} */ (form.querySelector("input, select")) ?? submitButton ?? cancelButton;
    first.focus();
  });
}

/**
 * @param {HTMLElement} dialog
 * @param {KeyboardEvent} event
 */
function trapTab(dialog, event) {
  if (event.key !== "Tab") return;
  const focusable = /** @type {HTMLElement[]} */ ([...dialog.querySelectorAll(FOCUSABLE)]);
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (!first || !last) return;
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}
