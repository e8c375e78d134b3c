// @ts-check
import { fill, focusHeading, focusRowHeading, h, hidden } from "../shared/dom.js";
import { when } from "../shared/format.js";
import { fail, goTo } from "../shared/notice.js";
import { pager } from "../shared/pager.js";
import { webhookCall, webhookPath } from "./webhook-actions.js";
import { eventsInWords } from "./webhook-words.js";
import { webhookButtons, webhookScope, webhookStatus } from "./webhooks.js";

// One webhook: what it is, and its deliveries (GET /webhooks/{id}/deliveries, newest first, a page at a
// time): each message's event type, every attempt with its time and the receiver's status or why there
// was none, and when it is tried next.

const PAGE = 25;
const STATES = /** @type {const} */ ({ delivered: ["on", "Delivered"], pending: ["off", "Pending"], failed: ["ending", "Failed"] });

/**
 * @param {HTMLElement} view
 * @param {import("../shared/session.js").Session} session
 * @param {number} id
 */
export async function showWebhook(view, session, id) {
  const heading = h("h1", { id: "webhook-title" }, `Webhook #${id}`);
  const about = h("div");
  const deliveries = h("div");
  fill(view, heading, about, deliveries);
  focusHeading(heading);
  let webhook;
  try {
    webhook = (await webhookCall("GET", webhookPath(id))).body;
  } catch (error) {
    return fail(error);
  }
  heading.textContent = `Webhook to ${webhook.url}`;
  const changed = (/** @type {string} */ action) => {
    if (action === "delete") goTo("#/webhooks");
    else void showWebhook(view, session, id);
  };
  fill(about,
    h("div", { class: "actions-bar" }, ...webhookButtons(webhook, changed)),
    h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", { class: "url" }, webhook.url),
      h("dt", {}, "Description"), h("dd", {}, webhook.description ?? h("span", { class: "muted" }, "none")),
      h("dt", {}, "Events"), h("dd", {}, eventsInWords(webhook.events)),
      h("dt", {}, "Keys of"), h("dd", {}, webhookScope(webhook, session.me)),
      h("dt", {}, "Status"), h("dd", {}, webhookStatus(webhook)),
      h("dt", {}, "Created"), h("dd", {}, when(webhook.createdAt)),
      h("dt", {}, "Changed"), h("dd", {}, when(webhook.modifiedAt)),
      h("dt", {}, "Id"), h("dd", {}, String(webhook.id))));
  await showDeliveries(deliveries, id);
}

/**
 * The deliveries' heading, table and buttons, read afresh.
 * @param {HTMLElement} place
 * @param {number} id
 */
async function showDeliveries(place, id) {
  const tbody = h("tbody");
  // Focus stays on Refresh, which the new rendering replaces.
  const refresh = h("button", { type: "button", class: "small", onclick: () => void showDeliveries(place, id).then(() => place.querySelector("button")?.focus()) },
    "Refresh", hidden(" the deliveries"));
  const list = pager({ label: "Show older deliveries", get: (path) => webhookCall("GET", path), tbody, row: deliveryRow, focus: focusRowHeading });
  fill(place,
    h("div", { class: "section-head" }, h("h2", { id: "deliveries-title" }, "Deliveries"), refresh),
    h("p", { class: "hint" }, "Every message keyplane has sent this webhook, or is about to, newest first. A message is delivered when the receiver answers 2xx " +
      "within 15 seconds; otherwise it is tried again 5 seconds, 5 minutes, 30 minutes, 2, 5, 10 and 10 hours after the attempt before, then given up."),
    h("div", { class: "table-wrap", role: "region", "aria-labelledby": "deliveries-title", tabindex: 0 },
      h("table", { id: "deliveries" },
        h("caption", {}, "This webhook's messages, newest first, with every attempt to deliver each."),
        h("thead", {}, h("tr", {}, ...["Message", "Event", "State", "Attempts", "Next attempt"].map((t) => h("th", { scope: "col" }, t)))),
        tbody)),
    list.more);
  try {
    const rows = await list.load(`${webhookPath(id)}/deliveries?limit=${PAGE}`);
    if (!rows.length) tbody.append(h("tr", {}, h("td", { colspan: 5 }, "No messages yet: one comes with the next change to a key in the webhook's scope.")));
  } catch (error) {
    fail(error);
  }
}

/** @param {any} delivery */
function deliveryRow(delivery) {
  const [tone, state] = STATES[/** @type {keyof typeof STATES} */ (delivery.state)] ?? ["off", delivery.state];
  return h("tr", {},
    h("td", {}, when(delivery.createdAt)),
    h("th", { scope: "row" }, delivery.type),
    h("td", {}, h("span", { class: `badge ${tone}` }, state)),
    h("td", {}, delivery.attempts.length
      ? h("ol", { class: "attempts" }, ...delivery.attempts.map((/** @type {any} */ attempt) => h("li", {}, when(attempt.at), " ", attemptResult(attempt))))
      : h("span", { class: "muted" }, "none yet")),
    h("td", {}, when(delivery.nextAttemptAt, "none")));
}

/**
 * "answered 204 in 12 ms", "no answer: connection refused".
 * @param {{ status: number | null, error: string | null, durationMs: number | null }} attempt
 */
export function attemptResult(attempt) {
  const took = attempt.durationMs === null ? "" : ` in ${attempt.durationMs} ms`;
  if (attempt.status !== null) return `answered ${attempt.status}${took}`;
  return `no answer${took}: ${attempt.error ?? "unknown"}`;
}
