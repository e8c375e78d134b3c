// @ts-check

// Webhooks in words (docs/webhooks.md): what each message type is sent for, and why keyplane refused
// what was entered. Nothing here touches the page, so it is tested in Node as well
// (src/console/webhook-words.test.ts).

/** Every message type, in the API's order, with when it is sent. */
export const EVENT_TYPES = /** @type {const} */ ([
  ["key.created", "a key is created"],
  ["key.updated", "a key is renamed, disabled or enabled, or its policy or expiry changes"],
  ["key.rotated", "a key is rotated"],
  ["key.deleted", "a key is deleted"],
  ["key.expired", "a key expires"],
  ["key.expiring", "a key's expiry is near (by default 7 days, and again 1 day, before)"],
  ["key.leaked", "a key's token is found published somewhere"],
  ["key.usage_exceeded", "a balance of credits runs out"],
]);

/**
 * "Every event", or the types a webhook is sent, in the API's order.
 * @param {string[]} events
 */
export function eventsInWords(events) {
  if (EVENT_TYPES.every(([type]) => events.includes(type))) return "Every event";
  return EVENT_TYPES.filter(([type]) => events.includes(type)).map(([type]) => type).join(", ");
}

/** @param {string} word */
const a = (word) => (/^[aeiou]/i.test(word) ? `an ${word}` : `a ${word}`);

const ASK_OPERATORS = "keyplane's operators can allow such addresses with KEYPLANE_WEBHOOK_ALLOW_PRIVATE=true";

/**
 * The API's reasons for refusing a webhook's URL (domain/webhook-url.ts), each said for a person who
 * has never heard of private address ranges or server-side request forgery.
 * @type {[RegExp, (m: RegExpMatchArray) => string][]}
 */
const URL_REFUSALS = [
  [/url must be https \(http is allowed only/,
    () => "This keyplane sends webhooks to https URLs only: give an https URL (keyplane's operators can allow http with KEYPLANE_WEBHOOK_ALLOW_HTTP=true)."],
  [/url's host is an? ([\w-]+) address \(([^)]+)\)/,
    (m) => `keyplane does not send webhooks to ${m[2]}: it is ${a(m[1] ?? "")} address, on keyplane's own machine or network, which webhooks may not reach. ` +
      `Give a URL your receiver answers at from the internet (${ASK_OPERATORS}).`],
  [/url's host (\S+) resolves to an? ([\w-]+) address \(([^)]+)\)/,
    (m) => `keyplane does not send webhooks to ${m[1]}: the name leads to ${m[3]}, ${a(m[2] ?? "")} address on keyplane's own machine or network, which webhooks may not reach. ` +
      `Give a URL your receiver answers at from the internet (${ASK_OPERATORS}).`],
  [/url must not carry a user name or password/,
    () => "The URL must not carry a user name or password: a receiver knows a message is keyplane's from its signature, made with the webhook's signing secret."],
  [/url must be an absolute URL|url must be an http or https URL|url must name a host|url must not hold spaces/,
    () => "That is not a URL keyplane can send to: give a whole URL, starting with https://, without spaces."],
  [/url must be at most (\d+) characters/, (m) => `The URL is too long: at most ${m[1]} characters.`],
];

/** What a restricted key (docs/api.md, "Restricted keys") is told of webhooks, which are not for it. */
export const NOT_FOR_THIS_KEY = "Webhooks are not available to this key: a policy (its own, or that of the key that made it) " +
  "restricts it to itself and the keys it made.";

/**
 * What a refusal of a webhook request means, in words; `message` is what the console would say
 * otherwise (for a 400, the API's own message).
 * @param {number | undefined} status
 * @param {string} message
 */
export function webhookRefusal(status, message) {
  if (status === 403) return NOT_FOR_THIS_KEY;
  if (status === 404) return "That webhook is not among the webhooks you may manage: it was deleted, or it lies outside your scope.";
  if (status !== 400) return message;
  for (const [pattern, words] of URL_REFUSALS) {
    const match = message.match(pattern);
    if (match) return words(match);
  }
  return message;
}
