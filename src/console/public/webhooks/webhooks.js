// @ts-check
// The webhooks room: the webhooks view, one webhook's page with its deliveries, what can be done to a
// webhook, and webhooks in words. It uses shared/; no other room.
import { Refused } from "../shared/api.js";
import { fill, focusHeading, h, hidden, renderAgain } from "../shared/dom.js";
import { scopeOf, when } from "../shared/format.js";
import { fail } from "../shared/notice.js";
import { pager } from "../shared/pager.js";
import { createWebhook, deleteWebhook, editWebhook, toggleWebhook, webhookCall } from "./webhook-actions.js";
import { eventsInWords, NOT_FOR_THIS_KEY } from "./webhook-words.js";

// The webhooks view (docs/webhooks.md): the webhooks the signed-in key may manage (GET /webhooks: those
// whose scope lies inside its own), a page at a time (Link rel="next"), and what can be done to each. A
// webhook's URL opens its deliveries.

const PAGE = 50;

/**
 * A webhook's state, as a badge.
 * @param {{ active: boolean }} webhook
 */
export function webhookStatus(webhook) {
  return webhook.active ? h("span", { class: "badge on" }, "Active") : h("span", { class: "badge off" }, "Disabled");
}

/**
 * "the domain sip.acme.example": whose keys' messages a webhook gets, named where the signed-in key
 * knows the name (its own entities) and by id below them.
 * @param {any} webhook
 * @param {any} me
 */
export function webhookScope(webhook, me) {
  const levels = /** @type {const} */ ([
    ["subscriberId", "subscriber", me.subscriber?.msisdn], ["applicationId", "application", me.application?.name],
    ["domainId", "domain", me.domain?.domain], ["tenantId", "customer", me.tenant?.name],
  ]);
  for (const [field, noun, name] of levels) {
    const id = webhook[field];
    if (id === null || id === undefined) continue;
    return id === me[field] ? `the ${noun} ${name}` : `the ${noun} #${id}, in ${scopeOf(me)}`;
  }
  return "every key";
}

/**
 * The buttons that act on a webhook; `changed` runs after each change that took (with what was done).
 * @param {any} webhook
 * @param {(action: string) => void} changed
 */
export function webhookButtons(webhook, changed) {
  /**
   * @param {string} action
   * @param {string} label
   * @param {() => Promise<boolean>} run
   * @param {string} [tone]
   */
  const button = (action, label, run, tone = "") => h("button", {
    type: "button", class: `small ${tone}`.trim(), "data-focus": `${action}-webhook-${webhook.id}`,
    onclick: async () => {
      if (await run()) changed(action);
    },
  }, label, hidden(` the webhook to ${webhook.url}`));
  return [
    button("edit", "Edit", () => editWebhook(webhook)),
    button("toggle", webhook.active ? "Disable" : "Enable", () => toggleWebhook(webhook)),
    button("delete", "Delete", () => deleteWebhook(webhook), "danger"),
  ];
}

/**
 * @param {HTMLElement} view
 * @param {import("../shared/session.js").Session} session
 * @param {number} [shown] how many webhooks to read at once: as many as were shown before a reload
 */
export async function showWebhooks(view, session, shown = PAGE) {
  const { me } = session;
  const heading = h("h1", { id: "webhooks-title" }, "Webhooks");
  const tbody = h("tbody");
  const reload = () => renderAgain(view, () => showWebhooks(view, session, Math.max(PAGE, list.count())));
  const list = pager({
    label: "Show more webhooks", get: (path) => webhookCall("GET", path), tbody,
    row: (webhook) => h("tr", {},
      h("th", { scope: "row", class: "url" }, h("a", { href: `#/webhook/${webhook.id}` }, webhook.url)),
      h("td", {}, webhook.description ?? h("span", { class: "muted" }, "none")),
      h("td", {}, eventsInWords(webhook.events)),
      h("td", {}, webhookScope(webhook, me)),
      h("td", {}, webhookStatus(webhook)),
      h("td", {}, when(webhook.createdAt)),
      h("td", {}, h("div", { class: "row-actions" }, ...webhookButtons(webhook, reload)))),
    focus: (first) => first.querySelector("a")?.focus(),
  });
  const create = h("button", { type: "button", class: "primary", "data-focus": "create-webhook", onclick: async () => { if (await createWebhook(me)) reload(); } }, "Create webhook");
  const table = h("table", { id: "webhooks" },
    h("caption", {}, "Webhooks, oldest first. A webhook's URL opens its deliveries."),
    h("thead", {}, h("tr", {}, ...["URL", "Description", "Events", "Keys of", "Status", "Created"].map((t) => h("th", { scope: "col" }, t)),
      h("th", { scope: "col" }, hidden("Actions")))),
    tbody);
  fill(view,
    h("div", { class: "view-head" }, heading, create),
    h("p", { class: "lede" }, "keyplane sends a signed message to a webhook's URL whenever a key inside its scope is created, changed, rotated, deleted, " +
      `nears its expiry or expires, is found leaked, or runs out of credits. These are the webhooks “${me.name}” may manage, in ${scopeOf(me)} and below.`),
    h("div", { class: "table-wrap", role: "region", "aria-labelledby": "webhooks-title", tabindex: 0 }, table),
    list.more,
  );
  focusHeading(heading);
  try {
    const rows = await list.load(`/webhooks?limit=${Math.min(1000, shown)}`);
    if (!rows.length) tbody.append(h("tr", {}, h("td", { colspan: 7 }, "No webhooks yet.")));
  } catch (error) {
    // A restricted key may not use webhooks at all: the view says so instead of a table it cannot fill.
    if (error instanceof Refused && error.status === 403) return fill(view, h("div", { class: "view-head" }, heading), h("p", { class: "lede", id: "webhooks-unavailable" }, NOT_FOR_THIS_KEY));
    fail(error);
  }
}
