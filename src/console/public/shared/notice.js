// @ts-check
/* global window, location, CustomEvent */
import { Refused } from "./api.js";
import { byId, fill } from "./dom.js";

// The two notices at the top of the page: `status` (polite: what was done) and `alert` (assertive: what
// went wrong). A refusal that means the key is not accepted any more signs the console out instead.

export const SIGNED_OUT = "keyplane:signed-out";

/** @param {string} text */
export function announce(text) {
  fill(byId("alert"));
  fill(byId("status"), text);
}

/** @param {string} text */
export function warn(text) {
  fill(byId("status"));
  fill(byId("alert"), text);
}

/**
 * Goes to another view, still saying what was just announced: a new view clears the notices, in
 * main.js's listener, which was added first and so runs before this one.
 * @param {string} hash
 */
export function goTo(hash) {
  const said = byId("status").textContent ?? "";
  if (said) window.addEventListener("hashchange", () => announce(said), { once: true });
  location.hash = hash;
}

export function clearNotices() {
  fill(byId("status"));
  fill(byId("alert"));
}

/**
 * Ends the session, saying why on the sign-in form.
 * @param {string} why
 */
export function signOut(why) {
  window.dispatchEvent(new CustomEvent(SIGNED_OUT, { detail: why }));
}

/**
 * What went wrong, in words: a refusal's own, or (for the console's own fault) a general one.
 * @param {unknown} error
 */
export function inWordsOf(error) {
  if (error instanceof Refused) return error.message;
  // Kept for whoever opens the browser's developer tools; a person sees words.
  globalThis.console.error(error);
  return "Something went wrong in the console. Reload the page and try again.";
}

/**
 * Shows what went wrong; a key no longer accepted ends the session.
 * @param {unknown} error
 */
export function fail(error) {
  if (error instanceof Refused && error.signedOut) {
    return signOut("The key you signed in with is no longer accepted: it was disabled, rotated, expired or deleted. Sign in with another key.");
  }
  warn(inWordsOf(error));
}
