// @ts-check
import { call, Refused } from "../shared/api.js";
import { openDialog } from "../shared/dialog.js";
import { h } from "../shared/dom.js";
import { scopeOf } from "../shared/format.js";
import { announce, fail } from "../shared/notice.js";
import { showSigningSecretOnce } from "../shared/token.js";
import { webhookForm } from "./webhook-form.js";
import { webhookRefusal } from "./webhook-words.js";

// What can be done to webhooks, each through the REST API (docs/webhooks.md): create, edit, disable and
// enable, delete. Each resolves true when it changed something, so the view showing the webhook reloads.

/** @typedef {{ id: number, url: string, description: string | null, events: string[], active: boolean, secret?: string }} Webhook */

/**
 * The API, with its refusals of webhook requests said as for webhooks (a 404 is a webhook gone, not a key).
 * @param {"GET" | "POST" | "PUT" | "DELETE"} method
 * @param {string} path
 * @param {unknown} [body]
 */
export async function webhookCall(method, path, body) {
  try {
    return await call(method, path, body);
  } catch (error) {
    if (!(error instanceof Refused) || error.signedOut) throw error;
    throw new Refused(webhookRefusal(error.status, error.message), { status: error.status });
  }
}

/** @param {number} id */
export const webhookPath = (id) => `/webhooks/${encodeURIComponent(String(id))}`;

/**
 * @param {any} me the signed-in key: a new webhook gets its scope
 * @returns {Promise<boolean>}
 */
export async function createWebhook(me) {
  const form = webhookForm("create-webhook", null);
  const made = /** @type {Webhook | undefined} */ (await openDialog({
    title: "Create a webhook", submit: "Create webhook",
    body: [h("p", {}, `It is sent the messages of the keys in ${scopeOf(me)} and below.`), ...form.blocks],
    act: async () => (await webhookCall("POST", "/webhooks", form.read())).body,
  }));
  if (!made?.secret) return false;
  const secret = made.secret;
  delete made.secret;
  await showSigningSecretOnce(made.url, secret);
  announce(`Created the webhook to ${made.url}.`);
  return true;
}

/**
 * @param {Webhook} webhook
 * @returns {Promise<boolean>}
 */
export async function editWebhook(webhook) {
  const form = webhookForm("edit-webhook", webhook);
  const edited = /** @type {Webhook | undefined} */ (await openDialog({
    title: `Edit the webhook to ${webhook.url}`, submit: "Save",
    body: form.blocks,
    act: async () => (await webhookCall("PUT", webhookPath(webhook.id), form.read())).body,
  }));
  if (!edited) return false;
  announce(`Saved the webhook to ${edited.url}.`);
  return true;
}

/**
 * Disabling asks first: the messages not yet delivered are given up.
 * @param {Webhook} webhook
 * @returns {Promise<boolean>}
 */
export async function toggleWebhook(webhook) {
  if (webhook.active) {
    const done = await openDialog({
      title: `Disable the webhook to ${webhook.url}?`, submit: "Disable", danger: true, alert: true,
      body: [h("p", {}, "keyplane stops sending it messages, until it is enabled again; those not yet delivered are given up.")],
      act: async () => (await webhookCall("PUT", webhookPath(webhook.id), { active: false }), true),
    });
    if (done) announce(`Disabled the webhook to ${webhook.url}.`);
    return Boolean(done);
  }
  try {
    await webhookCall("PUT", webhookPath(webhook.id), { active: true });
    announce(`Enabled the webhook to ${webhook.url}.`);
    return true;
  } catch (error) {
    fail(error);
    return false;
  }
}

/**
 * @param {Webhook} webhook
 * @returns {Promise<boolean>}
 */
export async function deleteWebhook(webhook) {
  const done = await openDialog({
    title: `Delete the webhook to ${webhook.url}?`, submit: "Delete", danger: true, alert: true,
    body: [h("p", {}, "keyplane stops sending it messages, and its deliveries are deleted with it. It cannot be brought back.")],
    act: async () => (await webhookCall("DELETE", webhookPath(webhook.id)), true),
  });
  if (done) announce(`Deleted the webhook to ${webhook.url}.`);
  return Boolean(done);
}
