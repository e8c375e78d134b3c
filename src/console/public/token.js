// @ts-check
/* global navigator */
import { openDialog } from "./dialog.js";
import { h } from "./dom.js";

// A new key's token, shown once: the dialog that shows it is the only place the page puts it, and it
// is removed from the page when closed (dialog.js). Lists never show tokens, though the API sends them.

/**
 * @param {string} title
 * @param {string} name the key's name
 * @param {string} token
 * @param {string} [note] what else to know (the old key's grace period after a rotation)
 */
export async function showTokenOnce(title, name, token, note) {
  const field = h("input", { id: "new-token", type: "text", readonly: true, spellcheck: "false", autocomplete: "off", "aria-describedby": "new-token-hint" });
  field.value = token;
  const copied = h("p", { class: "copied", role: "status" });
  const copy = h("button", { type: "button", onclick: async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      copied.textContent = "Copied to the clipboard.";
    } catch {
      field.select();
      copied.textContent = "The browser did not allow copying: the token is selected, press Ctrl+C (⌘C on a Mac).";
    }
  } }, "Copy", h("span", { class: "vh" }, " the token"));
  await openDialog({
    title,
    body: [
      h("p", { id: "new-token-hint" }, "This is the only time keyplane shows this token. Copy it now and keep it somewhere safe: once this closes, it cannot be shown again."),
      note ? h("p", {}, note) : null,
      h("label", { for: "new-token" }, `Token of “${name}”`),
      h("div", { class: "token-box" }, field, copy),
      copied,
    ].filter((node) => node !== null),
  });
  field.value = "";
}
