// @ts-check
import { call, Refused } from "./shared/api.js";
import { byId, fill, h } from "./shared/dom.js";
import { keepToken, TOKEN_FORM } from "./shared/session.js";

// Signing in: the key is tried on GET /keys/self before it is kept, so a wrong key is refused here, in
// words, and never stored.

/**
 * @param {(me: any) => void} signedIn called with the calling key once it is accepted
 * @param {string} [why] why the console is back here (a key no longer accepted)
 */
export function showSignIn(signedIn, why) {
  const field = h("input", { id: "token", type: "password", autocomplete: "off", spellcheck: "false", "aria-describedby": "token-hint" });
  const error = h("p", { class: "notice error", role: "alert" }, why ?? "");
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const heading = h("h1", { id: "sign-in-title" }, "Sign in");
  const form = h("form", { class: "sign-in", method: "post", novalidate: true, "aria-labelledby": "sign-in-title" },
    heading,
    h("p", {}, "Sign in with an API key to manage the keys it may manage. The key stays in this browser tab only, and is forgotten when the tab closes."),
    h("div", { class: "field" },
      h("label", { for: "token" }, "API key"),
      h("p", { class: "hint", id: "token-hint" }, "XI followed by 32 characters, 0-9 and A-F."),
      field),
    error,
    button);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = field.value.trim();
    if (!TOKEN_FORM.test(token)) {
      error.textContent = "That is not an API key: a key is XI followed by 32 characters, 0-9 and A-F.";
      field.focus();
      return;
    }
    button.disabled = true;
    error.textContent = "";
    try {
      const { body: me } = await call("GET", "/keys/self", undefined, token);
      keepToken(token);
      field.value = "";
      delete me.keyId;
      signedIn(me);
    } catch (failure) {
      error.textContent = failure instanceof Refused ? failure.message : "Signing in did not work. Reload the page and try again.";
      button.disabled = false;
      field.focus();
    }
  });
  fill(byId("view"), form);
  field.focus();
}
