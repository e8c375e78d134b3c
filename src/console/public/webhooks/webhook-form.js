// @ts-check
import { Refused } from "../shared/api.js";
import { h } from "../shared/dom.js";
import { EVENT_TYPES } from "./webhook-words.js";

// The fields of a webhook (docs/webhooks.md): where it sends, what it is for, and which messages. The
// same form creates one and edits one; what it reads is checked here first only where a person would
// otherwise wait for a refusal they could have been told at once.

/**
 * @typedef {object} WebhookFields
 * @property {string} url
 * @property {string | null} description
 * @property {string[]} events
 */

/**
 * @param {string} prefix the fields' ids start with it (one form on the page at a time)
 * @param {{ url: string, description: string | null, events: string[] } | null} webhook the one edited; null for a new one
 */
export function webhookForm(prefix, webhook) {
  const url = h("input", { id: `${prefix}-url`, type: "url", autocomplete: "off", spellcheck: "false", maxlength: 2048, "aria-describedby": `${prefix}-url-hint` });
  url.value = webhook?.url ?? "";
  const description = h("input", { id: `${prefix}-description`, type: "text", autocomplete: "off", maxlength: 256, "aria-describedby": `${prefix}-description-hint` });
  description.value = webhook?.description ?? "";
  const boxes = EVENT_TYPES.map(([type, when], i) => {
    const box = h("input", { id: `${prefix}-event-${i}`, type: "checkbox", value: type });
    box.checked = webhook ? webhook.events.includes(type) : true;
    return { box, block: h("div", { class: "check" }, box, h("label", { for: box.id }, h("code", {}, type), h("span", { class: "muted" }, `: ${when}`))) };
  });
  const blocks = [
    h("div", { class: "field" },
      h("label", { for: url.id }, "URL"),
      h("p", { class: "hint", id: `${prefix}-url-hint` }, "Where keyplane sends the messages: an https URL your receiver answers at."),
      url),
    h("div", { class: "field" },
      h("label", { for: description.id }, "Description (optional)"),
      h("p", { class: "hint", id: `${prefix}-description-hint` }, "For people: what the webhook is for. Up to 256 characters."),
      description),
    h("fieldset", { class: "checks" },
      h("legend", {}, "Events"),
      h("p", { class: "hint" }, "The messages it is sent: one whenever…"),
      ...boxes.map((b) => b.block)),
  ];
  /** @returns {WebhookFields} */
  const read = () => {
    const target = url.value.trim();
    if (!target) throw new Refused("Give the URL keyplane should send the messages to.");
    if (!/^https?:\/\//i.test(target)) throw new Refused("Give a whole URL, starting with https://.");
    const events = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
    if (!events.length) throw new Refused("Choose at least one event to send.");
    return { url: target, description: description.value.trim() || null, events };
  };
  return { blocks, read };
}
