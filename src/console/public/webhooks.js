// @ts-check
import { fill, focusHeading, h } from "./dom.js";

// Lifecycle webhooks are not built yet (docs/api.md, "Not built"): the view says so, and is where
// their list and form will go.

/** @param {HTMLElement} view */
export function showWebhooks(view) {
  const heading = h("h1", {}, "Webhooks");
  fill(view, heading,
    h("p", { class: "lede" }, "Webhooks will tell your services when a key is created, changed, rotated, deleted, about to expire or leaked."),
    h("div", { class: "notice info" }, "This keyplane does not offer webhooks yet. Until it does, the Events view shows every change to your keys."));
  focusHeading(heading);
}
