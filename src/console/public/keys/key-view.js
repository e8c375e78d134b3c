// @ts-check
import { call, keyPath } from "../shared/api.js";
import { fill, focusHeading, h } from "../shared/dom.js";
import { keyAnalyticsSection } from "../analytics/analytics.js";
import { eventsTable } from "../events/events.js";
import { levelOf, scopeOf, when } from "../shared/format.js";
import { actionButtons, status } from "./keys.js";
import { fail } from "../shared/notice.js";
import { policyView } from "./policy.js";
import { usageSection } from "./usage.js";

// One key: what it is, the policies that bind it with its live usage, and its events. A key that is
// gone (deleted, expired) still shows its events, which the API keeps by numeric id.

const ENTITIES = /** @type {const} */ ([
  ["tenant", "customer", "name"], ["domain", "domain", "domain"], ["application", "application", "name"], ["subscriber", "subscriber", "msisdn"],
]);

/**
 * @param {HTMLElement} view
 * @param {import("../shared/session.js").Session} session
 * @param {number} id
 */
export async function showKey(view, session, id) {
  const heading = h("h1", { id: "key-title" }, `Key #${id}`);
  const events = eventsTable("key-events", "This key's events, oldest first.", false);
  const about = h("div");
  fill(view, heading, about, h("h2", {}, "Events"), h("div", { class: "table-wrap", role: "region", "aria-label": "Events of this key", tabindex: 0 }, events.table));
  focusHeading(heading);
  const [key, history, usage] = await Promise.allSettled([call("GET", keyPath(id)), call("GET", keyPath(id, "/events")), call("GET", keyPath(id, "/usage"))]);
  if (history.status === "fulfilled") {
    events.tbody.append(...history.value.body.map(events.row));
    if (!history.value.body.length) events.empty();
  } else if (key.status === "fulfilled") {
    fail(history.reason);
  }
  if (key.status === "rejected") {
    if (key.reason?.status !== 404) return fail(key.reason);
    fill(about, h("p", {}, "This key is not among the keys you may manage: it was deleted, it expired, or it lies outside your scope. A deleted or expired key's events remain, below."));
    return;
  }
  const shown = key.value.body;
  delete shown.keyId;
  heading.textContent = `Key “${shown.name}”`;
  if (usage.status === "rejected") fail(usage.reason);
  const used = usage.status === "fulfilled" ? usage.value.body : null;
  // The live balance and its next refill, for the policy that holds them.
  const credits = (/** @type {string} */ scope) => (used?.credits?.scope === scope ? used.credits : null);
  fill(about,
    h("div", { class: "actions-bar" }, ...actionButtons(shown, session, () => void showKey(view, session, id))),
    h("dl", { class: "facts" },
      ...fact("Type", shown.type),
      ...fact("Scope", `${scopeOf(shown)} (${levelOf(shown)} level)`),
      ...fact("Status", status(shown), shown.replacedBy !== null ? [" by ", h("a", { href: `#/key/${shown.replacedBy}` }, `key #${shown.replacedBy}`)] : null),
      ...fact("Expires", when(shown.expiresAt)),
      ...fact("Last used", when(shown.lastUsedAt)),
      ...fact("Created", when(shown.createdAt)),
      ...fact("Id", String(shown.id))),
    usageSection(shown, used),
    keyAnalyticsSection(shown.id),
    h("h2", {}, "Policy"),
    h("section", { class: "panel", "aria-labelledby": "own-policy" }, h("h3", { id: "own-policy" }, "This key's own policy"), ...policyView(shown.policy, credits("key"))),
    ...inherited(shown, credits));
}

/**
 * @param {string} term
 * @param {...(Node | string | null | (Node | string)[])} description
 */
function fact(term, ...description) {
  return [h("dt", {}, term), h("dd", {}, ...description)];
}

/**
 * The policies of the entities a key lies in: they bind it too, and their limits and credits are shared.
 * @param {any} key
 * @param {(scope: string) => { remaining: number, nextRefillAt: string | null } | null} credits the live balance held at a level, when read
 */
function inherited(key, credits) {
  return ENTITIES.filter(([field]) => key[field]?.policy).map(([field, noun, name]) => {
    const id = `policy-${field}`;
    return h("section", { class: "panel", "aria-labelledby": id },
      h("h3", { id }, `The ${noun} ${key[field][name]}'s policy`),
      h("p", { class: "hint" }, `It binds every key in the ${noun}; its limits and credits are shared by all of them.`),
      ...policyView(key[field].policy, credits(noun)));
  });
}
