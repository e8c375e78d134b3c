// @ts-check
/* global navigator */
import { openDialog } from "./dialog.js";
import { h } from "./dom.js";

// Secrets keyplane shows once (a new key's token, a new webhook's signing secret): the dialog that shows
// one is the only place the page puts it, and it is removed from the page when closed (dialog.js).
// Lists never show tokens, though the API sends them.

/**
 * @typedef {object} ShownOnce
 * @property {string} title the dialog's
 * @property {string} id the field's
 * @property {string} label what the field holds, and whose
 * @property {string} noun "token", "signing secret": what the copy button copies
 * @property {string} value
 * @property {string} hint that this is the only time, and what to do with it
 * @property {string} [note] what else to know
 */

/** @param {ShownOnce} shown */
export async function showOnce({ title, id, label, noun, value, hint, note }) {
  const field = h("input", { id, type: "text", readonly: true, spellcheck: "false", autocomplete: "off", "aria-describedby": `${id}-hint` });
  field.value = value;
  const copied = h("p", { class: "copied", role: "status" });
  const copy = h("button", { type: "button", onclick: async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      copied.textContent = "Copied to the clipboard.";
    } catch {
      field.select();
      copied.textContent = `The browser did not allow copying: the ${noun} is selected, press Ctrl+C (⌘C on a Mac).`;
    }
  } }, "Copy", h("span", { class: "vh" }, ` the ${noun}`));
  await openDialog({
    title,
    body: [
      h("p", { id: `${id}-hint` }, hint),
      note ? h("p", {}, note) : null,
      h("label", { for: id }, label),
      h("div", { class: "token-box" }, field, copy),
      copied,
    ].filter((node) => node !== null),
  });
  field.value = "";
}

/**
 * @param {string} title
 * @param {string} name the key's name
 * @param {string} token
 * @param {string} [note] what else to know (the old key's grace period after a rotation)
 */
export function showTokenOnce(title, name, token, note) {
  return showOnce({
    title, id: "new-token", label: `Token of “${name}”`, noun: "token", value: token, note,
    hint: "This is the only time keyplane shows this token. Copy it now and keep it somewhere safe: once this closes, it cannot be shown again.",
  });
}

/**
 * @param {string} url the webhook's
 * @param {string} secret
 */
export function showSigningSecretOnce(url, secret) {
  return showOnce({
    title: "Webhook created", id: "new-secret", label: `Signing secret of the webhook to ${url}`, noun: "signing secret", value: secret,
    hint: "This is the only time keyplane shows this signing secret. Copy it now and give it to your receiver, which checks each message's " +
      "webhook-signature header with it (Standard Webhooks): once this closes, it cannot be shown again.",
  });
}
