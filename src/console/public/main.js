// @ts-check
/* global window, location, history */
import { call, Refused } from "./shared/api.js";
import { byId, fill, h } from "./shared/dom.js";
import { showAnalytics } from "./analytics/analytics.js";
import { showEvents } from "./events/events.js";
import { levelOf, scopeOf } from "./shared/format.js";
import { showKey } from "./keys/key-view.js";
import { showKeys } from "./keys/keys.js";
import { clearNotices, fail, inWordsOf, SIGNED_OUT, warn } from "./shared/notice.js";
import { forgetToken, keepToken, token } from "./shared/session.js";
import { showSignIn } from "./sign-in.js";
import { showWebhook } from "./webhooks/webhook-view.js";
import { showWebhooks } from "./webhooks/webhooks.js";

// The console's shell: signing in and out, who is signed in, and which view the address's fragment
// names (#/keys, #/key/12, #/events, #/webhooks, #/webhook/3, #/analytics). A fragment never holds anything
// secret: keys and webhooks are named by their numeric id. It opens the rooms' views (keys/, events/,
// webhooks/) and the sign-in form; nothing imports it.

/** @type {import("./shared/session.js").Session | null} */
let session = null;
const view = byId("view");
const VIEWS = ["keys", "events", "webhooks", "analytics"];
/** The views of one thing, by id, and the list each belongs to. */
const ONE = new Map([["key", "keys"], ["webhook", "webhooks"]]);

/** @param {any} me */
function signedIn(me) {
  session = { me, continueWith };
  showIdentity(me);
  byId("nav").hidden = false;
  byId("who").hidden = false;
  route();
}

/**
 * After the signed-in key was rotated: the new key is kept, and is who the console is now.
 * @param {string} next
 */
async function continueWith(next) {
  keepToken(next);
  const { body: me } = await call("GET", "/keys/self");
  delete me.keyId;
  if (session) session.me = me;
  showIdentity(me);
}

/** @param {any} me */
function showIdentity(me) {
  byId("who-name").textContent = me.name;
  byId("who-scope").textContent = `(${levelOf(me)} key, ${scopeOf(me)})`;
}

/** @param {string} [why] */
function signOut(why) {
  forgetToken();
  session = null;
  byId("nav").hidden = true;
  byId("who").hidden = true;
  clearNotices();
  if (location.hash) history.replaceState(null, "", location.pathname);
  showSignIn(signedIn, why);
}

function route() {
  if (!session) return;
  const [, name = "", id] = location.hash.match(/^#\/([a-z]+)(?:\/(\d+))?$/) ?? [];
  if (!(VIEWS.includes(name) || (ONE.has(name) && id))) {
    history.replaceState(null, "", "#/keys");
    return route();
  }
  clearNotices();
  for (const link of byId("nav").querySelectorAll("a")) {
    if (link.dataset.view === (ONE.get(name) ?? name)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const shown = name === "keys" ? showKeys(view, session)
    : name === "key" ? showKey(view, session, Number(id))
      : name === "events" ? showEvents(view)
        : name === "webhook" ? showWebhook(view, session, Number(id))
          : name === "analytics" ? showAnalytics(view)
            : showWebhooks(view, session);
  void Promise.resolve(shown).catch(fail);
}

async function start() {
  if (!token()) return showSignIn(signedIn);
  try {
    const { body: me } = await call("GET", "/keys/self");
    delete me.keyId;
    signedIn(me);
  } catch (error) {
    if (error instanceof Refused && error.signedOut) return signOut(error.message);
    fill(view, h("button", { type: "button", onclick: () => void start() }, "Try again"));
    warn(inWordsOf(error));
  }
}

window.addEventListener("hashchange", () => {
  // "#main" is the skip link's target, not a view.
  if (location.hash.startsWith("#/")) route();
});
window.addEventListener(SIGNED_OUT, (event) => signOut(/** @type {CustomEvent<string>} */ (event).detail));
byId("sign-out").addEventListener("click", () => signOut());
void start();
