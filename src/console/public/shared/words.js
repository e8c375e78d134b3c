// @ts-check

// What a refusal means, said to a person: never a status code, an error code or a stack. The API's
// own `message` is written for people (docs/api.md, "Errors"), so it is shown where it says what to
// change (a name taken, a value out of range); the rest is said here.

/**
 * @typedef {object} Refusal
 * @property {number} status
 * @property {string | undefined} message the API's message, when it sent one
 * @property {number | undefined} retryAfter seconds, from Retry-After
 * @property {string | null} requestId
 */

/**
 * @param {Refusal} refusal
 * @param {() => Date} [now]
 * @returns {string}
 */
export function inWords({ status, message, retryAfter, requestId }, now = () => new Date()) {
  switch (status) {
    case 401:
      return "keyplane did not accept this key. Check that it was copied whole; a key also stops working once it is disabled, rotated, expired or deleted.";
    case 403:
      return message ?? "This key may not do that.";
    case 404:
      return "That key is not among the keys you may manage: it was deleted, it expired, or it lies outside your scope.";
    case 409:
    case 400:
    case 413:
      return message ?? "keyplane could not accept what was entered.";
    case 429:
      return `keyplane is holding back requests from this address for a while, after too many keys it did not accept. ${whenToRetry(retryAfter, now)}`;
    case 503:
      return `keyplane cannot reach its database just now, so nothing could be read or changed. ${whenToRetry(retryAfter, now)}`;
  }
  const reference = requestId ? ` If it keeps happening, give your platform's operators this reference: ${requestId}.` : "";
  return `Something went wrong inside keyplane. Try again in a moment.${reference}`;
}

/** When a network error kept the request from keyplane altogether. */
export const UNREACHABLE = "keyplane could not be reached. Check the network connection, then try again.";

/**
 * @param {number | undefined} seconds
 * @param {() => Date} now
 */
function whenToRetry(seconds, now) {
  if (seconds === undefined) return "Try again in a moment.";
  const at = new Date(now().getTime() + seconds * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return `Try again in ${seconds} ${seconds === 1 ? "second" : "seconds"} (at ${at}).`;
}
