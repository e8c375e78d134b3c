// @ts-check
import { call, keyPath, Refused } from "../shared/api.js";
import { openDialog } from "../shared/dialog.js";
import { h } from "../shared/dom.js";
import { announce, fail } from "../shared/notice.js";
import { showTokenOnce } from "../shared/token.js";

// What can be done to keys, each through the REST API: create, rename, disable and enable, rotate,
// delete. Each resolves true when it changed something, so the view showing the key reloads.

/** @typedef {{ id: number, name: string, active: boolean, keyId?: string, replacedBy: number | null }} Key */

const EXPIRIES = /** @type {const} */ ([
  ["", "Never"], ["3600", "In 1 hour"], ["86400", "In 1 day"], ["604800", "In 7 days"], ["2592000", "In 30 days"], ["7776000", "In 90 days"], ["31536000", "In 1 year"],
]);
const GRACE = /** @type {const} */ ([
  ["0", "None: the old key stops at once"], ["300", "5 minutes"], ["3600", "1 hour"], ["86400", "1 day"], ["604800", "7 days"], ["2592000", "30 days"],
]);

/**
 * @param {string} id
 * @param {string} label
 * @param {readonly (readonly [string, string])[]} options
 * @param {string} [hint]
 */
function select(id, label, options, hint) {
  const field = h("select", { id, "aria-describedby": hint ? `${id}-hint` : null }, ...options.map(([value, text]) => h("option", { value }, text)));
  return { field, block: h("div", { class: "field" }, h("label", { for: id }, label), hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null, field) };
}

/**
 * @param {string} id
 * @param {string} label
 * @param {string} value
 */
function nameField(id, label, value) {
  const field = h("input", { id, type: "text", autocomplete: "off", maxlength: 128, "aria-describedby": `${id}-hint` });
  field.value = value;
  return { field, block: h("div", { class: "field" }, h("label", { for: id }, label), h("p", { class: "hint", id: `${id}-hint` }, "Up to 128 characters; unique among the live keys of its scope."), field) };
}

/** @param {string} name */
function named(name) {
  const trimmed = name.trim();
  if (!trimmed) throw new Refused("Give the key a name.");
  return trimmed;
}

/** @returns {Promise<boolean>} */
export async function createKey() {
  const name = nameField("create-name", "Name", "");
  const expiry = select("create-expiry", "Expires", EXPIRIES, "From then on the key is refused and gone from the list.");
  const key = /** @type {Key | undefined} */ (await openDialog({
    title: "Create a key", submit: "Create key",
    body: [h("p", {}, "The new key gets the scope of the key you signed in with."), name.block, expiry.block],
    act: async () => {
      const expiresIn = expiry.field.value ? Number(expiry.field.value) : undefined;
      return (await call("POST", "/keys", { name: named(name.field.value), expiresIn })).body;
    },
  }));
  if (!key?.keyId) return false;
  const token = key.keyId;
  delete key.keyId;
  await showTokenOnce("Key created", key.name, token);
  announce(`Created the key “${key.name}”.`);
  return true;
}

/**
 * @param {Key} key
 * @returns {Promise<boolean>}
 */
export async function renameKey(key) {
  const name = nameField("rename-name", "New name", key.name);
  const renamed = /** @type {Key | undefined} */ (await openDialog({
    title: `Rename “${key.name}”`, submit: "Rename",
    body: [name.block],
    act: async () => (await call("PUT", keyPath(key.id), { name: named(name.field.value) })).body,
  }));
  if (!renamed) return false;
  announce(`Renamed “${key.name}” to “${renamed.name}”.`);
  return true;
}

/**
 * Disabling asks first: a disabled key is refused at once, wherever it is used.
 * @param {Key} key
 * @param {boolean} self the key the console is signed in with
 * @returns {Promise<boolean>}
 */
export async function toggleKey(key, self) {
  if (key.active) {
    const done = await openDialog({
      title: `Disable “${key.name}”?`, submit: "Disable", danger: true, alert: true,
      body: [h("p", {}, "Every request with this key is refused from now on, until it is enabled again."),
        self ? h("p", {}, h("strong", {}, "This is the key you are signed in with: the console will sign out.")) : null].filter((n) => n !== null),
      act: async () => (await call("PUT", keyPath(key.id), { active: false }), true),
    });
    if (done) announce(`Disabled “${key.name}”.`);
    return Boolean(done);
  }
  try {
    await call("PUT", keyPath(key.id), { active: true });
    announce(`Enabled “${key.name}”.`);
    return true;
  } catch (error) {
    fail(error);
    return false;
  }
}

/**
 * @param {Key} key
 * @param {(token: string) => Promise<void>} continueWith called with the new token when the signed-in key was rotated
 * @param {boolean} self
 * @returns {Promise<boolean>}
 */
export async function rotateKey(key, self, continueWith) {
  const grace = select("rotate-grace", "Grace period", GRACE, "How long the old token keeps working beside the new one, for clients to move over.");
  const expiry = select("rotate-expiry", "The new key expires", EXPIRIES);
  let graceSeconds = 0;
  const rotated = /** @type {Key | undefined} */ (await openDialog({
    title: `Rotate “${key.name}”`, submit: "Rotate",
    body: [h("p", {}, "A new key with a new token takes this key's name, scope and state."), grace.block, expiry.block],
    act: async () => {
      graceSeconds = Number(grace.field.value);
      const expiresIn = expiry.field.value ? Number(expiry.field.value) : undefined;
      return (await call("POST", keyPath(key.id, "/rotate"), { gracePeriodSeconds: graceSeconds, expiresIn })).body;
    },
  }));
  if (!rotated?.keyId) return false;
  const token = rotated.keyId;
  delete rotated.keyId;
  // The console goes on with the new key; the old one may stop at once.
  if (self) await continueWith(token);
  const old = graceSeconds ? `The old token keeps working for ${GRACE.find(([s]) => Number(s) === graceSeconds)?.[1]}, then stops.` : "The old token has stopped working.";
  await showTokenOnce("Key rotated", rotated.name, token, self ? `${old} The console now uses the new key.` : old);
  announce(`Rotated “${rotated.name}”.`);
  return true;
}

/**
 * @param {Key} key
 * @param {boolean} self
 * @returns {Promise<boolean>}
 */
export async function deleteKey(key, self) {
  const done = await openDialog({
    title: `Delete “${key.name}”?`, submit: "Delete", danger: true, alert: true,
    body: [h("p", {}, "The key is refused from now on and cannot be brought back. Its events stay."),
      self ? h("p", {}, h("strong", {}, "This is the key you are signed in with: the console will sign out.")) : null].filter((n) => n !== null),
    act: async () => (await call("DELETE", keyPath(key.id)), true),
  });
  if (done) announce(`Deleted “${key.name}”.`);
  return Boolean(done);
}
