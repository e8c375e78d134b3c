import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import type { RequestListener } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import supertest from "supertest";
import { inject } from "vitest";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { createKeyplane, type Keyplane } from "../../src/keyplane.ts";
import type { Database } from "../../src/store/database.ts";
import { openPglite } from "../../src/store/pglite.ts";
import { openPostgres } from "../../src/store/postgres.ts";
import { Conformance } from "../support/conformance.ts";
import { createPostgresDatabase } from "../support/databases.ts";
import { captureLogger } from "../support/service.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";

// The console's world: a real keyplane in this process on a real HTTP listener, on PostgreSQL through
// a TCP proxy of the test's own (so the database can be taken away: a real 503) where a server
// answers, else on PGlite; a webhook receiver of the test's own on 127.0.0.1 (so keyplane is let send
// over http to a loopback address); and Debian's Chromium driven by playwright-core, a fresh profile
// each time.

export const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
/** Failed authentications a client may make in a minute: low, so the 429 is a few wrong keys away. */
export const FAILURES_PER_MINUTE = 3;
/** How long a request waits for the database before it is answered 503. */
const DATABASE_TIMEOUT_MS = 1_000;
export const SCREENSHOTS = join(import.meta.dirname, "../../test-results/console");

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `Debian's chromium is not installed at ${CHROMIUM} (apt-get install chromium)`;
}

/** An answer's body as JSON.parse reads it: the tests look into it as into any API answer. */
type Json = ReturnType<typeof JSON.parse>;

export interface Rest {
  /** A request with this bearer token, from an address of its own (the throttle counts each apart). */
  (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json; headers: Headers }>;
}

export interface ConsoleWorld {
  url: string;
  /** The API with the admin token, or with a key. */
  admin: Rest;
  as(token: string): Rest;
  /** The proxy between keyplane and PostgreSQL; undefined on PGlite. */
  proxy: TcpProxy | undefined;
  /** Where the console's webhooks send: it keeps every request and answers as the test says. */
  receiver: Receiver;
  stop(): Promise<void>;
}

let address = 0;

function rest(url: string, token: string): Rest {
  return async (method, path, body) => {
    address += 1;
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        "X-Forwarded-For": `192.0.2.${(address % 250) + 1}`,
        ...(body !== undefined && { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
}

async function openDatabase(log: ReturnType<typeof captureLogger>): Promise<{ db: Database; proxy?: TcpProxy; drop(): Promise<void> }> {
  if (!inject("postgresUrl")) {
    const db = await openPglite(undefined, log);
    return { db, drop: () => db.close() };
  }
  const created = await createPostgresDatabase();
  const target = new URL(created.url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  const db = openPostgres({ connectionString: proxy.urlFor(created.url), log, timeoutMs: DATABASE_TIMEOUT_MS });
  return {
    db,
    proxy,
    async drop() {
      await db.close();
      await proxy.close();
      await created.drop();
    },
  };
}

export async function startConsoleWorld(): Promise<ConsoleWorld> {
  const adminToken = "kpa_console_" + randomBytes(24).toString("hex");
  const log = captureLogger([], [adminToken]);
  const database = await openDatabase(log);
  const receiver = await startReceiver();
  const keyplane: Keyplane = await createKeyplane({
    db: database.db, secrets: { adminToken, masterKey: randomBytes(32) }, runtimeHeader: "X-SVC-APIKey", log,
    // The browsers come from 127.0.0.1 with an X-Forwarded-For of their own, so each is its own client.
    throttle: { failuresPerMinute: FAILURES_PER_MINUTE, now: () => 0 }, trustedProxies: parseTrustedProxies("127.0.0.1"),
    // Last use is written twice a second rather than once a minute, so the page can show it.
    lastUseFlushMs: 500,
    // Usage analytics are written five times a second rather than every 10 s, so the charts show them at once.
    analytics: { writeMs: 200 },
    // The receiver is http on 127.0.0.1, which keyplane refuses unless told otherwise (docs/webhooks.md).
    webhooks: { allowHttp: true, allowPrivate: true },
  });
  // Every answer of the REST API the page receives is checked against /openapi.json, as in the other
  // HTTP suites; the console's own files are no part of the API, nor of its document.
  const doc = (await supertest(keyplane.app).get("/openapi.json")).body as object;
  const checked = new Conformance(doc).wrap(keyplane.app);
  const handler: RequestListener = (req, res) => (/^\/console(\/|$)/.test(req.url ?? "") ? keyplane.app(req, res) : checked(req, res));
  const listening: Listening = await listen(handler, 0, "127.0.0.1");
  return {
    url: listening.url,
    admin: rest(listening.url, adminToken),
    as: (token) => rest(listening.url, token),
    proxy: database.proxy,
    receiver,
    async stop() {
      await listening.close(0);
      await keyplane.close();
      await receiver.close();
      await database.drop();
    },
  };
}

export interface Browsing {
  page: Page;
  context: BrowserContext;
  /** Every request the page made: URL, method and headers. */
  requests: { url: string; method: string; headers: Record<string, string> }[];
  /** What the page said went wrong: uncaught errors and CSP refusals. */
  problems: string[];
  close(): Promise<void>;
}

/** Chromium on a fresh profile, its requests from `client` (X-Forwarded-For), on the console's page. */
export async function openConsole(world: ConsoleWorld, client: string): Promise<Browsing> {
  const profile = await mkdtemp(join(tmpdir(), "keyplane-console-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, args: ARGS, headless: true,
    viewport: { width: 1280, height: 800 }, locale: "en-GB", timezoneId: "UTC",
    extraHTTPHeaders: { "X-Forwarded-For": client },
    permissions: ["clipboard-read", "clipboard-write"],
  });
  const requests: Browsing["requests"] = [];
  const problems: string[] = [];
  context.on("request", (r) => requests.push({ url: r.url(), method: r.method(), headers: r.headers() }));
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (/Content.Security.Policy|Trusted Type/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  await page.goto(`${world.url}/console`);
  return {
    page, context, requests, problems,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * An expression evaluated in the page (awaited when it is a promise). Written as text: the project's
 * types are Node's, without the DOM's, and the page is plain JavaScript anyway.
 */
export function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** What axe.run answers, as far as the tests read it. */
interface AxeResults {
  violations: { id: string; impact: string | null; nodes: unknown[]; help: string }[];
  passes: unknown[];
}

export interface Audit {
  view: string;
  violations: { id: string; impact: string | null; nodes: number; help: string }[];
  passes: number;
}

/**
 * axe-core on the page as it is (WCAG 2.0/2.1 A and AA, and best practices), and a screenshot of it
 * into SCREENSHOTS/<view>.png.
 */
export async function audit(page: Page, view: string): Promise<Audit> {
  if (!(await inPage<boolean>(page, `"axe" in window`))) await page.evaluate(AXE);
  const options = { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] }, resultTypes: ["violations"] };
  const result = await inPage<AxeResults>(page, `axe.run(document, ${JSON.stringify(options)})`);
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${view}.png`), fullPage: true });
  return {
    view,
    violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help })),
    passes: result.passes.length,
  };
}
