// @ts-check
/* global sessionStorage */

// The signed-in key lives in this tab's sessionStorage and nowhere else: not in a cookie (it would
// ride along on requests the page did not make), not in localStorage (it would outlive the tab), never
// in a URL. Closing the tab signs out.
const TOKEN = "keyplane.console.token";

/**
 * What every view is given of the signed-in key.
 * @typedef {object} Session
 * @property {any} me the signed-in key, without its token
 * @property {(token: string) => Promise<void>} continueWith carries on with a new token (the signed-in key was rotated)
 */

/** @returns {string | null} */
export function token() {
  return sessionStorage.getItem(TOKEN);
}

/** @param {string} value */
export function keepToken(value) {
  sessionStorage.setItem(TOKEN, value);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN);
}

/** What a key looks like (docs/api.md, "Keys"), checked before anything is sent. */
export const TOKEN_FORM = /^XI[0-9A-F]{32}$/;
