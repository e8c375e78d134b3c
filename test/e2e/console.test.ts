import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { signatureValid } from "../support/webhook-receiver.ts";
import { audit, chromiumMissing, inPage, openConsole, SCREENSHOTS, startConsoleWorld, type Audit, type Browsing, type ConsoleWorld } from "./console-fixture.ts";

// The console (GET /console) in Debian's Chromium against a real keyplane: every action a person takes,
// with the REST API confirming what it did; what the page may never do (send a request elsewhere, keep
// the key anywhere but sessionStorage, show a token twice); axe-core on every view; the keyboard alone.

const missing = chromiumMissing();
if (missing && process.env.CI === "true") throw new Error(`${missing}: CI must run the console's browser tests`);

const TOKEN = /XI[0-9A-F]{32}/;
const SECRET = /whsec_[A-Za-z0-9+/]{43}=/;
const HOUR = 3_600_000;

/** A status code, an error code or a stack: what a person should never be shown. */
const RAW = /\b[1-5]\d\d\b|unauthori[sz]ed|rate_limited|unavailable\b|not_found|\bat \S*\.js:\d+/i;

describe.skipIf(missing !== undefined)(`the console in Chromium${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let world: ConsoleWorld;
  const tokens = { customer: "", domain: "", otherDomain: "" };
  const ids = { billing: 0 };
  const browsings: Browsing[] = [];
  const audits: Audit[] = [];
  /** The browser signed in with the customer key, which the tests below take in turn. */
  let admin: Browsing;
  /** The browser of the keyboard test, signed in with the domain key. */
  let keyboard: Browsing;

  const open = async (client: string) => {
    const browsing = await openConsole(world, client);
    browsings.push(browsing);
    return browsing;
  };
  /** axe on the page as it is: no serious or critical violation, and no contrast violation at all. */
  const accessible = async (page: Page, view: string) => {
    const result = await audit(page, view);
    audits.push(result);
    const blocking = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical" || v.id === "color-contrast");
    expect(blocking, `${view}: ${JSON.stringify(blocking)}`).toEqual([]);
  };
  const signIn = async (page: Page, token: string) => {
    await page.getByLabel("API key").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor();
    await page.locator("tbody tr").first().waitFor();
  };
  /** The names in the keys table, once it has loaded. */
  const listedNames = async (page: Page) => {
    await page.locator("tbody tr").first().waitFor();
    return (await page.locator("tbody th[scope=row] a").allTextContents()).sort();
  };
  const row = (page: Page, name: string) => page.locator("tbody tr").filter({ has: page.getByRole("link", { name, exact: true }) });
  /** What has the keyboard's focus: its name, id and tag, whether its focus is drawn, and whether it is inside a dialog. */
  const focusOn = (page: Page) => inPage<{ text: string; id: string; tag: string; outline: string; dialog: boolean }>(page, `(() => {
    const e = document.activeElement;
    const style = getComputedStyle(e);
    return { text: (e.getAttribute("aria-label") ?? e.textContent ?? "").trim(), id: e.id, tag: e.tagName, outline: style.outlineStyle + " " + style.outlineWidth, dialog: Boolean(e.closest("dialog")) };
  })()`);
  /** Tab (or Shift+Tab) until the focused element says `text`; each stop must show its focus. */
  const tabUntil = async (page: Page, text: string, key = "Tab", limit = 40) => {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press(key);
      const now = await focusOn(page);
      expect(now.outline, `focus on ${now.tag} “${now.text}” is not visible`).toMatch(/^(solid|auto) ([2-9]|\d\d)/);
      if (now.text === text) return now;
    }
    throw new Error(`no focusable element says ${text}`);
  };
  /**
   * Until no dialog is left in the page: a closed dialog leaves the accessibility tree at once (so a
   * locator by role no longer finds it), and the page removes it a moment later, on its close event.
   */
  const gone = (page: Page) => expect.poll(() => page.locator("dialog").count()).toBe(0);
  /** POST /verify, as a gateway asks it: it counts the key's limits and charges its credits. */
  const verify = async (key: string) => {
    const res = await fetch(`${world.url}/verify`, { method: "POST", headers: { "Content-Type": "application/json", "X-Forwarded-For": "192.0.2.251" }, body: JSON.stringify({ key }) });
    return (await res.json()) as { code: string };
  };

  beforeAll(async () => {
    world = await startConsoleWorld();
    const a = world.admin;
    expect((await a("POST", "/admin/customers", { name: "acme" })).status).toBe(201);
    for (const domain of ["sip.acme.example", "media.acme.example"]) {
      expect((await a("POST", "/admin/customers/acme/domains", { domain })).status).toBe(201);
    }
    await a("PUT", "/admin/customers/acme/domains/sip.acme.example/policy", { ratelimits: [{ name: "domain-calls", limit: 500, windowSeconds: 60 }] });
    tokens.customer = (await a("POST", "/admin/customers/acme/keys", { name: "platform-team" })).body.keyId;
    const customer = world.as(tokens.customer);
    tokens.domain = (await customer("POST", "/customers/acme/domains/sip.acme.example/keys", { name: "sip-ops" })).body.keyId;
    tokens.otherDomain = (await customer("POST", "/customers/acme/domains/media.acme.example/keys", { name: "media-ops" })).body.keyId;
    const billing = await customer("POST", "/customers/acme/domains/sip.acme.example/keys", {
      name: "billing-export",
      policy: {
        restrictions: { methods: ["GET", "POST"], ips: ["203.0.113.0/24"] },
        ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1 }],
        credits: { remaining: 10_000, refill: { amount: 10_000, interval: "monthly", day: 1 } },
      },
    });
    expect(billing.status, JSON.stringify(billing.body)).toBe(200);
    ids.billing = billing.body.id;
    for (const [t, n] of [[tokens.customer, "platform-team"], [tokens.domain, "sip-ops"], [tokens.otherDomain, "media-ops"]] as const) expect(t, n).toMatch(TOKEN);
  });

  afterAll(async () => {
    for (const browsing of browsings) await browsing.close();
    await world?.stop();
    if (audits.length) {
      const lines = audits.map((a) => `  ${a.view}: ${a.passes} rules passed, violations: ${a.violations.map((v) => `${v.id} (${v.impact}, ${v.nodes})`).join(", ") || "none"}`);
      console.log(`axe-core on each view of the console:\n${lines.join("\n")}\nscreenshots: ${SCREENSHOTS}`);
    }
  });

  it("serves the page and its files with a strict Content-Security-Policy, and nothing inline", async () => {
    const page = await fetch(`${world.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toMatch(/unsafe-|\*|https?:|data:/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    expect(page.headers.get("set-cookie")).toBeNull();
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
    const module = await fetch(`${world.url}/console/main.js`);
    expect(module.status).toBe(200);
    expect(module.headers.get("content-type")).toMatch(/^(text|application)\/javascript/);
    expect(module.headers.get("content-security-policy")).toBe(csp);
    const unknown = await fetch(`${world.url}/console/secrets.txt`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: "not_found" });
    const post = await fetch(`${world.url}/console`, { method: "POST" });
    expect(post.status).toBe(405);
  });

  it("refuses a wrong key in words, keeps nothing of it, and after too many says when to try again", async () => {
    const { page, context, requests } = await open("198.51.100.10");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await accessible(page, "sign-in");
    const alert = page.locator("form").getByRole("alert");

    await page.getByLabel("API key").fill("my-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => alert.textContent()).toContain("That is not an API key");
    expect(requests.filter((r) => r.url.endsWith("/keys/self"))).toEqual([]);

    const unknown = "XI" + "0123456789ABCDEF".repeat(2);
    await page.getByLabel("API key").fill(unknown);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => alert.textContent()).toContain("keyplane did not accept this key");
    expect(await alert.textContent()).not.toMatch(RAW);
    await accessible(page, "sign-in-refused");

    // The throttle's limit of failures per client is low here: a few more, and it holds the client back.
    let said = "";
    for (let attempt = 0; attempt < 5 && !said.includes("Try again in"); attempt++) {
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Sign in" }).and(page.locator(":enabled")).waitFor();
      said = (await alert.textContent()) ?? "";
    }
    expect(said).toMatch(/holding back requests from this address.*Try again in \d+ seconds? \(at \d\d:\d\d:\d\d\)/);
    expect(said).not.toMatch(RAW);
    await accessible(page, "sign-in-throttled");
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([0, 0]);
    expect(await context.cookies()).toEqual([]);
  });

  it("signs in with a customer key kept in sessionStorage alone, and lists every key it may manage", async () => {
    admin = await open("198.51.100.20");
    const { page, context } = admin;
    await signIn(page, tokens.customer);
    const listed = (await world.as(tokens.customer)("GET", "/keys")).body.map((k: { name: string }) => k.name).sort();
    expect(await listedNames(page)).toEqual(listed);
    expect(listed).toEqual(expect.arrayContaining(["platform-team", "sip-ops", "media-ops", "billing-export"]));
    await expect.poll(() => page.locator("#who").textContent()).toMatch(/Signed in as platform-team.*customer key, acme/);
    const billing = row(page, "billing-export");
    expect(await billing.textContent()).toMatch(/acme › sip\.acme\.example.*Active.*2 restrictions · 1 rate limit · 10,000 credits/);
    expect(await page.evaluate(() => ({ session: Object.values(sessionStorage), local: localStorage.length }))).toEqual({ session: [tokens.customer], local: 0 });
    expect(await context.cookies()).toEqual([]);
    // Lists carry every key's token; the page shows none of them.
    expect(await page.content()).not.toMatch(TOKEN);
    await accessible(page, "keys");
  });

  it("creates a key that expires, shows its token once with a copy button, and then never again", async () => {
    const { page } = admin;
    await page.getByRole("button", { name: "Create key" }).click();
    const create = page.getByRole("dialog", { name: "Create a key" });
    await create.getByLabel("Name").fill("ci-job");
    await create.getByLabel("Expires").selectOption({ label: "In 1 hour" });
    await accessible(page, "create-dialog");
    const asked = Date.now();
    await create.getByRole("button", { name: "Create key" }).click();

    const shown = page.getByRole("dialog", { name: "Key created" });
    const token = await shown.getByLabel("Token of “ci-job”").inputValue();
    expect(token).toMatch(new RegExp(`^${TOKEN.source}$`));
    await accessible(page, "token-dialog");
    await shown.getByRole("button", { name: "Copy the token" }).click();
    await expect.poll(() => shown.getByRole("status").textContent()).toBe("Copied to the clipboard.");
    expect(await inPage(page, "navigator.clipboard.readText()")).toBe(token);

    const [made] = (await world.as(tokens.customer)("GET", "/keys?name=ci-job")).body;
    expect(made.keyId).toBe(token);
    expect(Math.abs(Date.parse(made.expiresAt) - (asked + HOUR))).toBeLessThan(60_000);
    expect((await world.as(token)("GET", "/keys/self")).body.name).toBe("ci-job");

    await shown.getByRole("button", { name: "Close" }).click();
    await shown.waitFor({ state: "detached" });
    await row(page, "ci-job").waitFor();
    expect(await row(page, "ci-job").textContent()).toContain("(in 1 hour)");
    await gone(page);
    const anywhere = await inPage(page, `document.documentElement.outerHTML.includes(${JSON.stringify(token)}) || [...document.querySelectorAll("input")].some((i) => i.value.includes(${JSON.stringify(token)}))`);
    expect(anywhere).toBe(false);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([tokens.customer]);
    await expect.poll(() => page.locator("#status").textContent()).toBe("Created the key “ci-job”.");
  });

  it("renames, disables and enables a key, each confirmed by the API", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const [job] = (await customer("GET", "/keys?name=ci-job")).body;

    await page.getByRole("button", { name: "Rename “ci-job”" }).click();
    const rename = page.getByRole("dialog", { name: "Rename “ci-job”" });
    await rename.getByLabel("New name").fill("nightly-export");
    await accessible(page, "rename-dialog");
    await rename.getByRole("button", { name: "Rename" }).click();
    await row(page, "nightly-export").waitFor();
    expect((await customer("GET", `/keys/${job.id}`)).body.name).toBe("nightly-export");

    await page.getByRole("button", { name: "Disable “nightly-export”" }).click();
    const disable = page.getByRole("alertdialog", { name: "Disable “nightly-export”?" });
    await accessible(page, "disable-dialog");
    await disable.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: "Enable “nightly-export”" }).waitFor();
    expect((await customer("GET", `/keys/${job.id}`)).body.active).toBe(false);
    expect((await world.as(job.keyId)("GET", "/keys/self")).status).toBe(401);
    expect(await row(page, "nightly-export").textContent()).toContain("Disabled");

    await page.getByRole("button", { name: "Enable “nightly-export”" }).click();
    await page.getByRole("button", { name: "Disable “nightly-export”" }).waitFor();
    expect((await customer("GET", `/keys/${job.id}`)).body.active).toBe(true);
    expect((await world.as(job.keyId)("GET", "/keys/self")).status).toBe(200);
  });

  it("rotates a key with a grace period: the new token shown once, the old one working until the grace ends", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const [old] = (await customer("GET", "/keys?name=nightly-export")).body;

    await page.getByRole("button", { name: "Rotate “nightly-export”" }).click();
    const rotate = page.getByRole("dialog", { name: "Rotate “nightly-export”" });
    await rotate.getByLabel("Grace period").selectOption({ label: "1 hour" });
    await accessible(page, "rotate-dialog");
    const asked = Date.now();
    await rotate.getByRole("button", { name: "Rotate" }).click();
    const shown = page.getByRole("dialog", { name: "Key rotated" });
    const token = await shown.getByLabel("Token of “nightly-export”").inputValue();
    expect(await shown.textContent()).toContain("The old token keeps working for 1 hour, then stops.");

    const replaced = (await customer("GET", `/keys/${old.id}`)).body;
    const successor = (await customer("GET", `/keys/${replaced.replacedBy}`)).body;
    expect(successor).toMatchObject({ keyId: token, name: "nightly-export", active: true });
    expect(Math.abs(Date.parse(replaced.expiresAt) - (asked + HOUR))).toBeLessThan(60_000);
    expect((await world.as(old.keyId)("GET", "/keys/self")).status).toBe(200);
    expect((await world.as(token)("GET", "/keys/self")).body.id).toBe(successor.id);

    await shown.getByRole("button", { name: "Close" }).click();
    await shown.waitFor({ state: "detached" });
    expect(await page.content()).not.toContain(token);
    await expect.poll(() => page.locator("tbody tr").filter({ hasText: "Replaced" }).count()).toBe(1);
  });

  it("deletes a key once asked to confirm", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const current = (await customer("GET", "/keys?name=nightly-export")).body.find((k: { replacedBy: number | null }) => k.replacedBy === null);

    const buttons = page.getByRole("button", { name: "Delete “nightly-export”" });
    await buttons.nth(1).click();
    const confirm = page.getByRole("alertdialog", { name: "Delete “nightly-export”?" });
    await accessible(page, "delete-dialog");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => page.getByRole("button", { name: "Delete “nightly-export”" }).count()).toBe(1);
    expect((await customer("GET", `/keys/${current.id}`)).status).toBe(404);
    expect((await world.as(current.keyId)("GET", "/keys/self")).status).toBe(401);
    await expect.poll(() => page.locator("#status").textContent()).toBe("Deleted “nightly-export”.");
    // The list as changes leave it: a key replaced and working out its grace period beside the others,
    // and the signed-in key's last use, as recorded.
    const shownUse = await row(page, "platform-team").locator("td").nth(4).locator("time").getAttribute("datetime");
    const recorded = (await customer("GET", "/keys?name=platform-team")).body[0].lastUsedAt;
    expect(Date.parse(shownUse!)).toBeLessThanOrEqual(Date.parse(recorded));
    await accessible(page, "keys-after-changes");
  });

  it("shows a key's policy, its live credits and next refill, the policies above it, and its events", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    await customer("PUT", `/keys/${ids.billing}/credits`, { add: -50 });
    const credits = (await customer("GET", `/keys/${ids.billing}/credits`)).body;
    expect(credits.remaining).toBe(9_950);

    await page.getByRole("link", { name: "billing-export", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Key “billing-export”" }).waitFor();
    const own = page.getByRole("region", { name: "This key's own policy" });
    await own.getByText("credits left").waitFor();
    expect(await own.textContent()).toMatch(/From addresses: 203\.0\.113\.0\/24.*Methods: GET, POST/);
    expect(await own.textContent()).toMatch(/calls: 100 requests per 1 second/);
    expect(await own.textContent()).toMatch(/9,950 credits left; set back to 10,000 on day 1 of each month, at 00:00 UTC/);
    const refill = new Date(credits.nextRefillAt);
    expect(await own.locator(`time[datetime="${credits.nextRefillAt}"]`).textContent())
      .toContain(refill.toLocaleDateString("en-GB", { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" }));
    expect(await page.getByRole("region", { name: "The domain sip.acme.example's policy" }).textContent()).toMatch(/domain-calls: 500 requests per 1 minute/);
    const events = (await customer("GET", `/keys/${ids.billing}/events`)).body.map((e: { action: string }) => e.action);
    expect(await page.locator("#key-events tbody th").allTextContents()).toEqual(events);
    expect(events[0]).toBe("created");
    await accessible(page, "key");
  });

  it("shows what a key has used of every limit that binds it, and its credits, as the API counts them", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    expect((await world.admin("PUT", "/admin/customers/acme/policy", { ratelimits: [{ name: "daily-calls", limit: 1000, windowSeconds: 86_400 }] })).status).toBe(200);
    const probe = (await customer("POST", "/customers/acme/domains/media.acme.example/keys", { name: "usage-probe" })).body;
    // Windows of a day and of 30 days: a read of the page and one of the API do not straddle a window's end.
    const policy = { ratelimits: [{ name: "monthly-calls", limit: 5000, windowSeconds: 2_592_000 }], credits: { remaining: 20, refill: { amount: 20, interval: "daily" } } };
    expect((await customer("PUT", `/keys/${probe.id}`, { policy })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await verify(probe.keyId)).code).toBe("VALID");
    const read = async () => (await customer("GET", `/keys/${probe.id}/usage`)).body;
    // Credits a process took ahead and did not spend go back within a second (docs/adr/0013).
    await expect.poll(async () => (await read()).credits.remaining, { timeout: 5_000 }).toBe(17);

    await page.goto(`${world.url}/console#/key/${probe.id}`);
    await page.getByRole("heading", { level: 1, name: "Key “usage-probe”" }).waitFor();
    const usage = page.locator("#usage");
    await usage.locator("tbody tr").first().waitFor();
    const [api, readAt] = [await read(), Date.now()];
    expect(api.ratelimits.map((l: { name: string; scope: string }) => `${l.scope} ${l.name}`)).toEqual(["customer daily-calls", "key monthly-calls"]);
    const shown = await usage.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    const grouped = (n: number) => n.toLocaleString("en-GB");
    expect(shown.map((cells) => cells.slice(0, 4))).toEqual([
      ["daily-calls", "the customer acme", "1,000 requests per 1 day", `${grouped(api.ratelimits[0].remaining)} of 1,000`],
      ["monthly-calls", "this key", "5,000 requests per 30 days", `${grouped(api.ratelimits[1].remaining)} of 5,000`],
    ]);
    // Three requests were counted at both levels (a process may hold a few more units it has not spent).
    expect(api.ratelimits[0].remaining).toBeLessThanOrEqual(997);
    expect(api.ratelimits[1].remaining).toBeLessThanOrEqual(4997);
    const resets = await usage.locator("tbody tr td:last-child time").evaluateAll((times) => times.map((t) => t.getAttribute("datetime")));
    resets.forEach((at, i) => expect(Math.abs(Date.parse(at!) - (readAt + api.ratelimits[i].reset * 1000))).toBeLessThan(3_000));
    const credits = page.locator("#usage-credits");
    expect(await credits.textContent()).toMatch(/^17 credits left on this key's own balance\. Next refill: /);
    expect(await credits.locator("time").getAttribute("datetime")).toBe(api.credits.nextRefillAt);
    expect(await page.getByRole("region", { name: "This key's own policy" }).textContent()).toMatch(/17 credits left; set back to 20 each day/);
    await accessible(page, "key-usage");

    // Reading again shows what was used since.
    expect((await verify(probe.keyId)).code).toBe("VALID");
    await expect.poll(async () => (await read()).credits.remaining, { timeout: 5_000 }).toBe(16);
    await page.getByRole("button", { name: "Refresh the usage" }).click();
    await expect.poll(() => credits.locator("strong").textContent()).toBe("16");
    expect(await usage.locator("tbody tr").nth(1).locator("td.left").textContent()).toBe(`${grouped((await read()).ratelimits[1].remaining)} of 5,000`);
  });

  it("charts a key's usage by outcome, with the numbers in a table and a legend, and the scope's most used keys", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const charted = (await customer("POST", "/customers/acme/domains/media.acme.example/keys", { name: "charted" })).body;
    for (let i = 0; i < 3; i++) expect((await verify(charted.keyId)).code).toBe("VALID");
    const refused = await fetch(`${world.url}/verify`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key: charted.keyId, path: "/customers/globex/x" }) });
    expect(((await refused.json()) as { code: string }).code).toBe("FORBIDDEN");
    const counted = async () => (await customer("GET", `/keys/${charted.id}/analytics`)).body.buckets.at(-1);
    await expect.poll(counted, { timeout: 5_000 }).toMatchObject({ valid: 3, forbidden: 1 });

    await page.goto(`${world.url}/console#/key/${charted.id}`);
    await page.getByRole("heading", { level: 2, name: "Usage over time" }).waitFor();
    const hours = page.getByRole("figure", { name: "The last 24 hours" });
    await hours.waitFor();
    expect(await hours.locator("figcaption").textContent()).toBe("The last 24 hours 4 requests: 3 valid, 1 forbidden.");
    // The numbers, for screen readers: a row per hour, the last one this hour's, as the API counted them.
    const table = page.getByRole("table", { name: "The last 24 hours, by hour (UTC)" });
    expect(await table.locator("tbody tr").count()).toBe(25);
    const api = await counted();
    const last = await table.locator("tbody tr").last().evaluate((tr) => [...tr.children].map((c) => c.textContent));
    expect(last.slice(1)).toEqual([api.valid, api.restricted, api.rateLimited, api.usageExceeded, api.forbidden, api.disabled, api.expired, api.credits].map(String));
    expect(await page.getByRole("table", { name: "The last 30 days, by day (UTC)" }).locator("tbody tr").count()).toBe(30);
    // Drawn as stacked bars by the page itself: this hour's bar holds a segment for each outcome it had.
    expect(await hours.locator("svg g").last().locator("rect").evaluateAll((rects) => rects.map((r) => r.getAttribute("class")))).toEqual(["outcome-valid", "outcome-forbidden"]);
    expect(await page.getByRole("list", { name: "What the colours mean" }).textContent()).toContain("Forbidden — refused: the key may not reach that path");
    await accessible(page, "key-analytics");

    await page.getByRole("link", { name: "Analytics" }).click();
    await page.getByRole("heading", { level: 1, name: "Analytics" }).waitFor();
    const top = page.getByRole("region", { name: "Most used keys, last 30 days" });
    await top.waitFor();
    const scope = (await customer("GET", `/analytics?interval=day&from=${new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`)).body;
    const rows = await top.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].slice(0, 2).map((c) => c.textContent)));
    expect(rows).toEqual(scope.top.map((k: { name: string; requests: number }) => [k.name, k.requests.toLocaleString("en-GB")]));
    expect(rows).toContainEqual(["charted", "4"]);
    await accessible(page, "analytics");
    // A key of the top list opens its page, from the keyboard too.
    await top.getByRole("link", { name: "charted" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Key “charted”" }).waitFor();
  });

  it("shows a gone key's events, which the API keeps", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const [replaced] = (await customer("GET", "/keys?name=nightly-export")).body;
    await page.goto(`${world.url}/console#/key/${replaced.replacedBy}`);
    await page.getByText("This key is not among the keys you may manage").waitFor();
    const events = (await customer("GET", `/keys/${replaced.replacedBy}/events`)).body;
    await expect.poll(() => page.locator("#key-events tbody th").allTextContents()).toEqual(["created", "deleted"]);
    expect(events.map((e: { action: string }) => e.action)).toEqual(["created", "deleted"]);
    expect(await page.locator("#key-events").textContent()).toContain("key “platform-team”");
  });

  it("pages through the events of the scope, newest first, and filters them by action", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    for (let i = 0; i < 30; i++) await customer("POST", "/keys", { name: `batch-${i}` });
    const first = await customer("GET", "/events?limit=25");
    const older = await customer("GET", first.headers.get("link")!.match(/<([^>]+)>/)![1]!);
    const summary = (e: { action: string; key: { name: string } }) => `${e.action} ${e.key.name}`;

    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Events" }).click();
    const rows = page.locator("#events tbody tr");
    await expect.poll(() => rows.count()).toBe(25);
    const shownRows = async () => (await rows.evaluateAll((trs) => trs.map((tr) => `${tr.querySelector("th")!.textContent} ${tr.querySelector("a")!.textContent}`)));
    expect(await shownRows()).toEqual(first.body.map(summary));
    await accessible(page, "events");
    await page.getByRole("button", { name: "Show older events" }).click();
    await expect.poll(() => rows.count()).toBe(25 + older.body.length);
    expect((await shownRows()).slice(25)).toEqual(older.body.map(summary));

    await page.getByLabel("Action").selectOption("rotated");
    await page.getByRole("button", { name: "Show", exact: true }).click();
    await expect.poll(() => shownRows()).toEqual(["rotated nightly-export"]);
  });

  it("pages through a long list of keys", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    for (let i = 30; i < 50; i++) await customer("POST", "/keys", { name: `batch-${i}` });
    const all = (await customer("GET", "/keys")).body.map((k: { name: string }) => k.name);
    expect(all.length).toBeGreaterThan(50);
    await page.getByRole("link", { name: "Keys" }).click();
    const names = page.locator("tbody th[scope=row] a");
    await expect.poll(() => names.count()).toBe(50);
    await page.getByRole("button", { name: "Show more keys" }).click();
    await expect.poll(() => names.allTextContents()).toEqual(all);
    expect(await page.getByRole("button", { name: "Show more keys" }).isHidden()).toBe(true);
  });

  it("creates a webhook, shows its secret once, lists its deliveries, and edits, disables and deletes it", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    const { receiver } = world;
    const url = `${receiver.url}/console`;
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Webhooks" }).click();
    await page.getByText("No webhooks yet.").waitFor();

    await page.getByRole("button", { name: "Create webhook" }).click();
    const create = page.getByRole("dialog", { name: "Create a webhook" });
    await create.getByLabel("URL", { exact: true }).fill(`http://ops:hunter2@127.0.0.1:${receiver.port}/console`);
    await create.getByRole("button", { name: "Create webhook" }).click();
    const refused = create.getByRole("alert");
    await expect.poll(() => refused.textContent()).toContain("The URL must not carry a user name or password");
    expect(await refused.textContent()).not.toMatch(RAW);
    expect((await customer("GET", "/webhooks")).body).toEqual([]);
    await create.getByLabel("URL", { exact: true }).fill(url);
    await create.getByLabel("Description (optional)").fill("billing sync");
    await create.getByRole("checkbox", { name: /^key\.leaked/ }).uncheck();
    await accessible(page, "webhook-create-dialog");
    await create.getByRole("button", { name: "Create webhook" }).click();

    const shown = page.getByRole("dialog", { name: "Webhook created" });
    const secret = await shown.getByLabel(`Signing secret of the webhook to ${url}`).inputValue();
    expect(secret).toMatch(new RegExp(`^${SECRET.source}$`));
    await accessible(page, "webhook-secret-dialog");
    await shown.getByRole("button", { name: "Copy the signing secret" }).click();
    await expect.poll(() => shown.getByRole("status").textContent()).toBe("Copied to the clipboard.");
    expect(await inPage(page, "navigator.clipboard.readText()")).toBe(secret);
    const listed = (await customer("GET", "/webhooks")).body;
    expect(listed).toHaveLength(1);
    const made = listed[0];
    expect(made).toMatchObject({ url, description: "billing sync", active: true, domainId: null });
    expect(made.events).toEqual(["key.created", "key.updated", "key.rotated", "key.deleted", "key.expired", "key.expiring", "key.usage_exceeded"]);
    expect(made).not.toHaveProperty("secret");
    await shown.getByRole("button", { name: "Close" }).click();
    await shown.waitFor({ state: "detached" });
    await gone(page);
    const anywhere = await inPage(page, `document.documentElement.outerHTML.includes(${JSON.stringify(secret)}) || [...document.querySelectorAll("input")].some((i) => i.value.includes(${JSON.stringify(secret)}))`);
    expect(anywhere).toBe(false);
    expect(await page.evaluate(() => [Object.values(sessionStorage), localStorage.length])).toEqual([[tokens.customer], 0]);
    await expect.poll(() => page.locator("#status").textContent()).toBe(`Created the webhook to ${url}.`);
    const listedRow = page.locator("#webhooks tbody tr").filter({ hasText: url });
    expect(await listedRow.textContent()).toMatch(/billing sync.*key\.created, key\.updated.*key\.usage_exceeded.*the customer acme.*Active/);
    await accessible(page, "webhooks");

    // A key changes: the receiver gets the message, signed with the secret shown, and the page lists it.
    receiver.received.length = 0;
    const hooked = (await customer("POST", "/keys", { name: "hooked" })).body;
    const [message] = await receiver.waitFor(1);
    expect(signatureValid(secret, message!)).toBe(true);
    expect(JSON.parse(message!.body)).toMatchObject({ type: "key.created", data: { event: { key: { id: hooked.id } } } });
    await listedRow.getByRole("link", { name: url }).click();
    await page.getByRole("heading", { level: 1, name: `Webhook to ${url}` }).waitFor();
    const deliveries = page.locator("#deliveries tbody tr");
    const refresh = page.getByRole("button", { name: "Refresh the deliveries" });
    await expect.poll(async () => {
      await refresh.click();
      return deliveries.first().textContent();
    }).toContain("Delivered");
    const [delivered] = (await customer("GET", `/webhooks/${made.id}/deliveries`)).body;
    expect(delivered).toMatchObject({ type: "key.created", state: "delivered", nextAttemptAt: null, attempts: [{ status: 204 }] });
    expect(await deliveries.first().locator("th").textContent()).toBe("key.created");
    expect(await deliveries.first().textContent()).toMatch(/answered 204 in \d+ ms.*none$/);
    expect(await deliveries.first().locator("ol time").getAttribute("datetime")).toBe(delivered.attempts[0].at);

    // The receiver fails and asks for an hour's pause: the page shows the attempt and when the next is due.
    receiver.answer = () => ({ status: 503, headers: { "Retry-After": "3600" } });
    await customer("PUT", `/keys/${hooked.id}`, { name: "hooked-renamed" });
    await receiver.waitFor(2);
    await expect.poll(async () => {
      await refresh.click();
      return deliveries.first().textContent();
    }).toContain("answered 503");
    const [retrying] = (await customer("GET", `/webhooks/${made.id}/deliveries`)).body;
    expect(retrying).toMatchObject({ type: "key.updated", state: "pending", attempts: [{ status: 503 }] });
    expect(await deliveries.first().textContent()).toContain("Pending");
    expect(await deliveries.first().locator("td").last().locator("time").getAttribute("datetime")).toBe(retrying.nextAttemptAt);
    expect(await deliveries.count()).toBe(2);
    receiver.answer = () => ({ status: 204 });
    await accessible(page, "webhook");

    await page.getByRole("button", { name: `Edit the webhook to ${url}` }).click();
    const edit = page.getByRole("dialog", { name: `Edit the webhook to ${url}` });
    expect(await edit.getByLabel("Description (optional)").inputValue()).toBe("billing sync");
    await edit.getByLabel("Description (optional)").fill("billing sync, v2");
    await edit.getByRole("checkbox", { name: /^key\.leaked/ }).check();
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.waitFor({ state: "detached" });
    await expect.poll(async () => (await customer("GET", `/webhooks/${made.id}`)).body.description).toBe("billing sync, v2");
    expect((await customer("GET", `/webhooks/${made.id}`)).body.events).toHaveLength(8);
    await expect.poll(() => page.locator("dl.facts").textContent()).toContain("Every event");

    // Disabling stops what is not yet delivered: it fails when it comes due, unsent (docs/webhooks.md).
    await page.getByRole("button", { name: `Disable the webhook to ${url}` }).click();
    await page.getByRole("alertdialog", { name: `Disable the webhook to ${url}?` }).getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: `Enable the webhook to ${url}` }).waitFor();
    expect((await customer("GET", `/webhooks/${made.id}`)).body.active).toBe(false);
    expect(["pending", "failed"]).toContain((await customer("GET", `/webhooks/${made.id}/deliveries`)).body[0].state);
    await page.getByRole("button", { name: `Enable the webhook to ${url}` }).click();
    await page.getByRole("button", { name: `Disable the webhook to ${url}` }).waitFor();
    expect((await customer("GET", `/webhooks/${made.id}`)).body.active).toBe(true);

    await page.getByRole("button", { name: `Delete the webhook to ${url}` }).click();
    const confirm = page.getByRole("alertdialog", { name: `Delete the webhook to ${url}?` });
    await accessible(page, "webhook-delete-dialog");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No webhooks yet.").waitFor();
    expect((await customer("GET", `/webhooks/${made.id}`)).status).toBe(404);
    expect((await customer("GET", "/webhooks")).body).toEqual([]);
    await expect.poll(() => page.locator("#status").textContent()).toBe(`Deleted the webhook to ${url}.`);
  });

  it("pages through a long list of webhooks", async () => {
    const { page } = admin;
    const customer = world.as(tokens.customer);
    // 51 webhooks inside the customer key's scope (25 a scope at most): more than a page of 50.
    const made: number[] = [];
    for (const [token, n] of [[tokens.customer, 25], [tokens.domain, 25], [tokens.otherDomain, 1]] as const) {
      for (let i = 0; i < n; i++) made.push((await world.as(token)("POST", "/webhooks", { url: `${world.receiver.url}/paged-${made.length}` })).body.id);
    }
    const all = (await customer("GET", "/webhooks")).body.map((w: { url: string }) => w.url);
    try {
      expect(all).toHaveLength(51);
      // The view is read afresh when it is entered: leave it first (the test before ends on it).
      const nav = page.getByRole("navigation", { name: "Console" });
      await nav.getByRole("link", { name: "Keys" }).click();
      await page.getByRole("heading", { name: "Keys", level: 1 }).waitFor();
      await nav.getByRole("link", { name: "Webhooks" }).click();
      const urls = page.locator("#webhooks tbody th[scope=row] a");
      await expect.poll(() => urls.count()).toBe(50);
      await page.getByRole("button", { name: "Show more webhooks" }).click();
      await expect.poll(() => urls.allTextContents()).toEqual(all);
      expect(await page.getByRole("button", { name: "Show more webhooks" }).isHidden()).toBe(true);
    } finally {
      for (const id of made) await customer("DELETE", `/webhooks/${id}`);
    }
  });

  it("shows a domain key only its own domain's keys", async () => {
    const { page } = await open("198.51.100.30");
    await signIn(page, tokens.domain);
    const listed = (await world.as(tokens.domain)("GET", "/keys")).body.map((k: { name: string }) => k.name).sort();
    expect(await listedNames(page)).toEqual(listed);
    expect(listed).toEqual(["billing-export", "sip-ops"]);
    await expect.poll(() => page.locator("#who").textContent()).toMatch(/sip-ops.*domain key, acme › sip\.acme\.example/);
    await page.goto(`${world.url}/console#/key/${(await world.as(tokens.customer)("GET", "/keys?name=media-ops")).body[0].id}`);
    await page.getByText("This key is not among the keys you may manage").waitFor();
  });

  it("shows a restricted key itself and the keys it made, and says webhooks are not for it", async () => {
    const asCustomer = world.as(tokens.customer);
    const partner = (await asCustomer("POST", "/keys", { name: "console-partner", policy: { ratelimits: [{ name: "partner-calls", limit: 1000, windowSeconds: 60 }] } })).body;
    const made = (await world.as(partner.keyId)("POST", "/keys", { name: "partner-app" })).body;
    expect(made.parentId).toBe(partner.id);
    const { page } = await open("198.51.100.33");
    await signIn(page, partner.keyId);
    expect(await listedNames(page)).toEqual(["console-partner", "partner-app"]);
    await page.goto(`${world.url}/console#/webhooks`);
    await page.locator("#webhooks-unavailable").getByText("Webhooks are not available to this key").waitFor();
    expect(await page.locator("#alert").textContent()).not.toMatch(RAW);
    await accessible(page, "webhooks of a restricted key");
    expect((await asCustomer("DELETE", `/keys/${partner.id}`)).status).toBe(204);
    expect((await asCustomer("DELETE", `/keys/${made.id}`)).status).toBe(204);
  });

  it("signs out, saying why, when its key is disabled elsewhere", async () => {
    const made = (await world.as(tokens.customer)("POST", "/keys", { name: "short-lived" })).body;
    const { page } = await open("198.51.100.50");
    await signIn(page, made.keyId);
    expect((await world.as(tokens.customer)("PUT", `/keys/${made.id}`, { active: false })).status).toBe(200);
    await page.getByRole("link", { name: "Events" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.locator("form").getByRole("alert").textContent()).toContain("The key you signed in with is no longer accepted");
    expect(await inPage(page, "sessionStorage.length")).toBe(0);
    expect(await page.locator("#nav").isHidden()).toBe(true);
  });

  it("is used with the keyboard alone: Tab, Enter and Escape, focus always visible, kept inside dialogs", async () => {
    keyboard = await open("198.51.100.40");
    const { page } = keyboard;
    const focused = () => focusOn(page);
    const tabTo = (text: string, key = "Tab", limit = 40) => tabUntil(page, text, key, limit);

    // The domain key: its list is short enough to Tab through.
    expect((await focused()).id).toBe("token");
    await page.keyboard.type(tokens.domain);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor();
    await page.locator("tbody tr").first().waitFor();

    await tabTo("Create key");
    await page.keyboard.press("Enter");
    const create = page.getByRole("dialog", { name: "Create a key" });
    await create.waitFor();
    expect((await focused()).id).toBe("create-name");
    await page.keyboard.press("Escape");
    await create.waitFor({ state: "detached" });
    expect((await focused()).text).toBe("Create key");

    await page.keyboard.press("Enter");
    await page.keyboard.type("typed-by-keyboard");
    await page.keyboard.press("Enter");
    const shown = page.getByRole("dialog", { name: "Key created" });
    await shown.waitFor();
    // Focus stays in the dialog: from its last control, Tab comes back to its first.
    const stops = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab");
      const now = await focused();
      expect(now.dialog).toBe(true);
      stops.push(now.id || now.text);
    }
    expect(stops).toEqual(["Copy the token", "Close", "new-token", "Copy the token"]);
    await page.keyboard.press("Shift+Tab");
    expect((await focused()).id).toBe("new-token");
    await page.keyboard.press("Escape");
    await shown.waitFor({ state: "detached" });
    await row(page, "typed-by-keyboard").waitFor();
    expect((await world.as(tokens.domain)("GET", "/keys?name=typed-by-keyboard")).body).toHaveLength(1);

    await tabTo("Rename “typed-by-keyboard”");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Control+A");
    await page.keyboard.type("renamed-by-keyboard");
    await page.keyboard.press("Enter");
    await row(page, "renamed-by-keyboard").waitFor();
    expect((await focused()).text).toBe("Rename “renamed-by-keyboard”");

    await tabTo("Delete “renamed-by-keyboard”");
    await page.keyboard.press("Enter");
    expect((await focused()).text).toBe("Cancel");
    await page.keyboard.press("Tab");
    expect((await focused()).text).toBe("Delete");
    await page.keyboard.press("Enter");
    await row(page, "renamed-by-keyboard").waitFor({ state: "detached" });
    expect((await world.as(tokens.domain)("GET", "/keys?name=renamed-by-keyboard")).body).toEqual([]);

    await tabTo("Events", "Shift+Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Events" }).waitFor();
    expect(await focused()).toMatchObject({ tag: "H1", text: "Events" });
  });

  it("creates, disables and deletes a webhook with the keyboard alone, focus kept inside its dialogs", async () => {
    const { page } = keyboard;
    const url = `${world.receiver.url}/keyboard`;
    const domain = world.as(tokens.domain);
    await tabUntil(page, "Webhooks", "Shift+Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
    expect(await focusOn(page)).toMatchObject({ tag: "H1", text: "Webhooks" });

    await tabUntil(page, "Create webhook");
    await page.keyboard.press("Enter");
    await page.getByRole("dialog", { name: "Create a webhook" }).waitFor();
    expect((await focusOn(page)).id).toBe("create-webhook-url");
    await page.keyboard.type(url);
    await page.keyboard.press("Tab");
    await page.keyboard.type("typed by keyboard");
    await page.keyboard.press("Tab");
    expect((await focusOn(page)).id).toBe("create-webhook-event-0");
    await page.keyboard.press("Space");
    expect(await page.getByRole("checkbox", { name: /^key\.created/ }).isChecked()).toBe(false);
    // From the last control, Tab comes back to the first.
    await tabUntil(page, "Create webhook", "Tab", 12);
    expect((await focusOn(page)).dialog).toBe(true);
    await page.keyboard.press("Tab");
    expect((await focusOn(page)).id).toBe("create-webhook-url");
    await page.keyboard.press("Enter");

    const shown = page.getByRole("dialog", { name: "Webhook created" });
    await shown.waitFor();
    const stops = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab");
      const now = await focusOn(page);
      expect(now.dialog).toBe(true);
      stops.push(now.id || now.text);
    }
    expect(stops).toEqual(["Copy the signing secret", "Close", "new-secret", "Copy the signing secret"]);
    await page.keyboard.press("Escape");
    await shown.waitFor({ state: "detached" });
    // The list is read again with the new webhook, and focus goes back to the button that began it.
    await page.locator("#webhooks tbody tr").filter({ hasText: url }).waitFor();
    await expect.poll(async () => (await focusOn(page)).text).toBe("Create webhook");
    const [made] = (await domain("GET", "/webhooks")).body;
    expect(made).toMatchObject({ url, description: "typed by keyboard", domainId: expect.any(Number) });
    expect(made.events).not.toContain("key.created");

    // Escape leaves a confirmation without acting; focus goes back where it was.
    await tabUntil(page, `Disable the webhook to ${url}`);
    await page.keyboard.press("Enter");
    await page.getByRole("alertdialog", { name: `Disable the webhook to ${url}?` }).waitFor();
    expect((await focusOn(page)).text).toBe("Cancel");
    await page.keyboard.press("Escape");
    expect((await focusOn(page)).text).toBe(`Disable the webhook to ${url}`);
    expect((await domain("GET", `/webhooks/${made.id}`)).body.active).toBe(true);

    await tabUntil(page, `Delete the webhook to ${url}`);
    await page.keyboard.press("Enter");
    expect((await focusOn(page)).text).toBe("Cancel");
    await page.keyboard.press("Tab");
    expect((await focusOn(page)).text).toBe("Delete");
    await page.keyboard.press("Enter");
    await page.getByText("No webhooks yet.").waitFor();
    expect((await domain("GET", `/webhooks/${made.id}`)).status).toBe(404);
  });

  it("carries on with the new key when the signed-in key is rotated, and signs out once it is deleted", async () => {
    const { page } = keyboard;
    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByRole("button", { name: "Rotate “sip-ops”" }).click();
    await page.getByRole("dialog", { name: "Rotate “sip-ops”" }).getByRole("button", { name: "Rotate" }).click();
    const shown = page.getByRole("dialog", { name: "Key rotated" });
    const token = await shown.getByLabel("Token of “sip-ops”").inputValue();
    expect(await shown.textContent()).toContain("The old token has stopped working. The console now uses the new key.");
    await shown.getByRole("button", { name: "Close" }).click();
    expect(await inPage(page, "Object.values(sessionStorage)")).toEqual([token]);
    expect((await world.as(tokens.domain)("GET", "/keys/self")).status).toBe(401);
    const [successor] = (await world.as(tokens.customer)("GET", "/keys?name=sip-ops")).body;
    expect(successor.keyId).toBe(token);
    // The row was the signed-in key's before the rotation too: it is the successor's once its link says so.
    await expect.poll(() => row(page, "sip-ops").getByRole("link").getAttribute("href"), { timeout: 5_000 }).toBe(`#/key/${successor.id}`);
    expect(await row(page, "sip-ops").textContent()).toContain("(you)");

    await page.getByRole("button", { name: "Delete “sip-ops”" }).click();
    const confirm = page.getByRole("alertdialog", { name: "Delete “sip-ops”?" });
    expect(await confirm.textContent()).toContain("This is the key you are signed in with: the console will sign out.");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.locator("form").getByRole("alert").textContent()).toBe("You deleted the key you were signed in with, so the console signed out.");
    expect(await inPage(page, "sessionStorage.length")).toBe(0);
    expect((await world.as(token)("GET", "/keys/self")).status).toBe(401);
  });

  it("says in words when keyplane cannot reach its database, and carries on once it can", async ({ skip }) => {
    if (!world.proxy) skip("on PGlite the database cannot be taken away (PostgreSQL runs this case)");
    const { page } = admin;
    await page.getByRole("link", { name: "Keys" }).click();
    await page.locator("tbody tr").first().waitFor();
    world.proxy!.cut();
    try {
      await page.getByRole("link", { name: "Events" }).click();
      const alert = page.locator("#alert");
      await expect.poll(() => alert.textContent(), { timeout: 10_000 }).toContain("keyplane cannot reach its database just now");
      expect(await alert.textContent()).not.toMatch(RAW);
      await accessible(page, "unavailable");
    } finally {
      world.proxy!.restore();
    }
    await expect.poll(async () => {
      await page.getByRole("button", { name: "Show", exact: true }).click();
      return page.locator("#events tbody tr").count();
    }, { timeout: 15_000 }).toBeGreaterThan(1);
  });

  it("made no request beyond keyplane's origin, put no token or secret in a URL, and broke no rule of its CSP", () => {
    const origin = new URL(world.url).origin;
    const all = browsings.flatMap((b) => b.requests);
    expect(all.length).toBeGreaterThan(50);
    expect(all.filter((r) => new URL(r.url).origin !== origin).map((r) => r.url)).toEqual([]);
    expect(all.filter((r) => TOKEN.test(decodeURIComponent(r.url)) || SECRET.test(decodeURIComponent(r.url))).map((r) => r.url)).toEqual([]);
    expect(all.filter((r) => r.headers.cookie !== undefined)).toEqual([]);
    const api = all.filter((r) => !new URL(r.url).pathname.startsWith("/console"));
    expect(api.length).toBeGreaterThan(20);
    expect(api.filter((r) => !/^Bearer XI[0-9A-F]{32}$/.test(r.headers.authorization ?? "") && !r.url.endsWith("/favicon.ico"))).toEqual([]);
    expect(browsings.flatMap((b) => b.problems)).toEqual([]);
  });
});
