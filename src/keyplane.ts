import type { RequestListener } from "node:http";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Config, Secrets } from "./config.ts";
import { createSealer } from "./domain/seal.ts";
import { createApp, type AppNeeds } from "./http/app.ts";
import type { AuthGateway } from "./http/verification/auth-gateway.ts";
import { AuthHandler } from "./http/verification/auth-routes.ts";
import { parseTrustedProxies, type TrustedProxies } from "./http/verification/client-address.ts";
import { withSelfFastPath } from "./http/verification/self-fast-path.ts";
import { withVerifyFastPath } from "./http/verification/verify-routes.ts";
import { invalidateCachesOnChanges } from "./services/verification/cache-invalidation.ts";
import { KeyCache, type KeyCacheOptions } from "./services/verification/key-cache.ts";
import { KeyInserts } from "./services/keys/key-inserts.ts";
import { EXPIRY_SWEEP_MS, sweepExpiries } from "./services/keys/expiry-sweep.ts";
import { LAST_USE_FLUSH_MS, LastUse } from "./services/verification/last-use.ts";
import { GITHUB_KEYS_URL, GithubKeys } from "./services/leaks/github-keys.ts";
import { DEFAULT_LEAK_SETTINGS } from "./services/leaks/leaks.ts";
import type { LeakSettings } from "./services/leaks/needs.ts";
import { isReady } from "./services/operations/health.ts";
import { Metrics } from "./services/operations/metrics.ts";
import { every } from "./services/operations/periodic.ts";
import { Throttle, type ThrottleOptions } from "./services/verification/throttle.ts";
import { PathScopeCache, type PathScopeCacheOptions } from "./services/verification/path-scope-cache.ts";
import { PolicyChains } from "./services/policy/policy-chain.ts";
import { METER_SWEEP_MS, PolicyMeter, sqlCounters, type PolicyMeterOptions } from "./services/policy/policy-meter.ts";
import { pruneWindows, WINDOWS_PRUNE_MS } from "./services/policy/policy-windows.ts";
import { INVOKE_TIMEOUT_MS } from "./runtime/runtime.ts";
import { DEFAULT_EXPIRY_NOTICES, parseExpiryNotices } from "./domain/webhooks/expiry-notices.ts";
import { httpWebhookClient, type WebhookClient } from "./services/webhooks/webhook-client.ts";
import { EXPIRY_NOTICE_MS, ExpiryNotices, noticingEmptyBalances, UsageNotices } from "./services/webhooks/webhook-notices.ts";
import { pruneWebhookRecords, WEBHOOK_PRUNE_MS, webhookQueue } from "./services/webhooks/webhook-queue.ts";
import { WebhookSender, type SendResult, type WebhookSenderOptions } from "./services/webhooks/webhook-sender.ts";
import { systemResolver, type WebhookSettings } from "./services/webhooks/webhook-settings.ts";
import { VERSION } from "./version.ts";
import { DEFAULT_RETENTION, parseRetention, type Retention } from "./domain/analytics/retention.ts";
import { ANALYTICS_UPKEEP_MS, ANALYTICS_WRITE_MS, type AnalyticsNeeds } from "./services/analytics/needs.ts";
import { UsageCounter } from "./services/analytics/usage-counter.ts";
import { usageUpkeep } from "./services/analytics/usage-upkeep.ts";
import { UsageWriter } from "./services/analytics/usage-writer.ts";
import { startWebhookWorker, type Sender } from "./webhook-worker.ts";
import { importWorkerRunner } from "./import-worker.ts";
import type { Database } from "./store/database.ts";
import { loadMigrations, migrate } from "./store/migrate.ts";
import { openPglite } from "./store/pglite.ts";
import { openPostgres } from "./store/postgres.ts";

export async function openDatabase(config: Pick<Config, "databaseUrl" | "dataDir" | "databaseTimeoutMs">, log: Logger): Promise<Database> {
  return config.databaseUrl
    ? openPostgres({ connectionString: config.databaseUrl, log, timeoutMs: config.databaseTimeoutMs })
    : openPglite(join(config.dataDir, "pgdata"), log);
}

export interface KeyplaneOptions {
  db: Database;
  secrets: Pick<Secrets, "adminToken" | "masterKey">;
  runtimeHeader: string;
  /** How long `invoke` waits for an application (default 10 s). */
  invokeTimeoutMs?: number;
  log: Logger;
  clock?: () => Date;
  keyCache?: KeyCacheOptions;
  /** How often this process writes when keys were last used (default a minute). */
  lastUseFlushMs?: number;
  /** How often this process records expiries that have passed (default 20 s). */
  expirySweepMs?: number;
  /** Failed-authentication throttling (default 60 failures a minute per client). */
  throttle?: ThrottleOptions;
  /** What platform paths name, kept until the directory changes. */
  pathScopes?: PathScopeCacheOptions;
  /** Whose X-Forwarded-For names the client (default none). */
  trustedProxies?: TrustedProxies;
  /** The gateway whose headers /auth reads (default nginx). */
  authGateway?: AuthGateway;
  /** Keep Prometheus metrics (docs/operations.md): on when something serves them. */
  metrics?: boolean;
  /** Leases of rate limits and credits (docs/adr/0013): how long unspent credits stay unused before they go back (1 s). */
  meter?: PolicyMeterOptions;
  /** Leak response (docs/leaks.md): the default policy and grace, where GitHub's signing keys are, and how they are fetched. */
  leaks?: Partial<LeakSettings> & { githubKeysUrl?: string; fetch?: typeof globalThis.fetch };
  /** Webhooks (docs/webhooks.md): where they may send, the expiry notices, and the sender's parts. */
  webhooks?: WebhookOptions;
  /**
   * On PostgreSQL, import keys on a worker thread with a pool of its own (src/import-worker.ts), as
   * `keyplane serve` does; else imports run on this thread, on `db` (PGlite, and the tests that ask so).
   */
  importWorker?: { connectionString: string; timeoutMs: number; logLevel: string };
  /** Usage analytics (docs/analytics.md): counted unless `counting` is false; the retention; how often counts are written (10 s). */
  analytics?: { counting?: boolean; retention?: Retention; writeMs?: number };
}

export interface WebhookOptions extends Partial<WebhookSettings> {
  /** Seconds before an expiry at which key.expiring is sent, furthest first (7 days and 1 day). */
  expiryNotices?: number[];
  /** How often due expiry notices are looked for (20 s). */
  expiryNoticeMs?: number;
  /**
   * On PostgreSQL, send from a worker thread with a pool of its own (src/webhook-worker.ts), as `keyplane
   * serve` does; else the sender runs on this thread, on `db` (PGlite, and the tests that drive it).
   */
  worker?: { connectionString: string; timeoutMs: number; logLevel: string };
  /** How attempts are made (node:http(s), the time-out of docs/webhooks.md). */
  client?: WebhookClient;
  sender?: Pick<WebhookSenderOptions, "concurrency" | "pollMs" | "leaseMs" | "random" | "yieldTo">;
}

export interface Keyplane {
  /** The one object that meets every room's needs: the app's routes, the operator and the runtime each read their part. */
  ctx: AppNeeds;
  /** The HTTP handler: /auth and the fast paths of POST /verify and GET /keys/self in front of the express app. */
  app: RequestListener;
  /** The Prometheus metrics, when asked for. */
  metrics: Metrics | undefined;
  /** This process's webhook sender; tests that move the clock make it deliver what is due with `drain()`. */
  webhooks: Sender;
  /** Sends the key.expiring notices due now (run every 20 s). */
  expiryNotices: ExpiryNotices;
  /** Usage analytics' periodic work, for tests that move the clock: the write (every 10 s) and the partitions' upkeep (hourly). */
  analytics: { write(): Promise<void>; upkeep(): Promise<void> };
  /**
   * Stops the background work: listening for key and directory changes, the expiry sweep, the
   * last-use batches and usage analytics, after writing the last of each, and gives back unspent credits (the database stays
   * open: it belongs to the caller).
   */
  close(): Promise<void>;
}

/** The service over an open database: migrates it, wires the use cases and the HTTP app. */
export async function createKeyplane(options: KeyplaneOptions): Promise<Keyplane> {
  const { db, log } = options;
  const migrations = await loadMigrations();
  await migrate(db, log, migrations);
  const keyCache = new KeyCache(db, options.keyCache);
  const lastUse = new LastUse(db, keyCache, log);
  const clock = options.clock ?? (() => new Date());
  const w = options.webhooks ?? {};
  const usage = new UsageNotices({ db, clock, log });
  const meter = new PolicyMeter(noticingEmptyBalances(sqlCounters(db), usage), clock, log, options.meter);
  const webhooks: WebhookSettings = { allowHttp: w.allowHttp ?? false, allowPrivate: w.allowPrivate ?? false, resolve: w.resolve ?? systemResolver };
  const ctx: AppNeeds = { db, sealer: createSealer(options.secrets.masterKey), keyCache, keyInserts: new KeyInserts(db), lastUse,
    throttle: new Throttle(options.throttle ?? { failuresPerMinute: 60 }), pathScopes: new PathScopeCache(options.pathScopes),
    policies: new PolicyChains(db, log), meter, clock, log, migrations,
    leaks: { policy: options.leaks?.policy ?? DEFAULT_LEAK_SETTINGS.policy, graceSeconds: options.leaks?.graceSeconds ?? DEFAULT_LEAK_SETTINGS.graceSeconds },
    githubKeys: new GithubKeys({ url: options.leaks?.githubKeysUrl ?? GITHUB_KEYS_URL, clock, log, fetch: options.leaks?.fetch }), webhooks };
  if (options.metrics) {
    ctx.metrics = new Metrics({ keyCache: () => keyCache.stats(), databaseUp: () => isReady(ctx), meter: () => meter.stats(),
      webhookQueue: () => webhookQueue({ db, clock }), webhookHeap: async () => (await sender.heapBytes?.()) ?? 0 });
  }
  const analytics: AnalyticsNeeds = { db, clock, log, retention: options.analytics?.retention ?? parseRetention(DEFAULT_RETENTION), registry: ctx.metrics?.registry };
  if (options.analytics?.counting !== false) ctx.analytics = new UsageCounter(options.clock ? () => clock().getTime() : Date.now);
  const usageWriter = ctx.analytics && new UsageWriter(analytics, ctx.analytics);
  const upkeep = () => usageUpkeep(analytics, usageWriter?.known ?? new Set());
  await upkeep().catch((error: unknown) => log.warn({ err: error }, "could not make usage analytics' partitions; will retry"));
  const sender = await startSender(ctx, options);
  if (options.importWorker) {
    ctx.importRunner = importWorkerRunner({ ...options.importWorker, masterKey: options.secrets.masterKey, secrets: [options.secrets.adminToken] }, ctx, log);
  }
  const expiryNotices = new ExpiryNotices({ db, clock, log }, w.expiryNotices ?? parseExpiryNotices(DEFAULT_EXPIRY_NOTICES));
  const unlisten = await invalidateCachesOnChanges(ctx);
  const trustedProxies = options.trustedProxies ?? parseTrustedProxies("");
  const auth = new AuthHandler(ctx, trustedProxies, options.authGateway ?? "nginx");
  const runtime = { header: options.runtimeHeader, timeoutMs: options.invokeTimeoutMs ?? INVOKE_TIMEOUT_MS };
  const express = createApp(ctx, { adminToken: options.secrets.adminToken, runtime, version: VERSION, trustedProxies, auth, analytics });
  const app = auth.inFrontOf(withVerifyFastPath(ctx, trustedProxies, withSelfFastPath(ctx, trustedProxies, express)));
  const jobs = [
    every(options.expirySweepMs ?? EXPIRY_SWEEP_MS, () => sweepExpiries(ctx), log, "expiry sweep"),
    every(options.lastUseFlushMs ?? LAST_USE_FLUSH_MS, () => lastUse.flush(), log, "last-use flush"),
    every(METER_SWEEP_MS, () => meter.sweep(), log, "unspent credits' return"),
    every(WINDOWS_PRUNE_MS, () => pruneWindows(ctx), log, "old rate-limit windows' pruning"),
    every(w.expiryNoticeMs ?? EXPIRY_NOTICE_MS, () => expiryNotices.sweep(), log, "expiry notices"),
    every(WEBHOOK_PRUNE_MS, () => pruneWebhookRecords({ db, clock }, expiryNotices), log, "old webhook deliveries' pruning"),
    every(ANALYTICS_UPKEEP_MS, upkeep, log, "usage analytics' partitions"),
    ...(usageWriter ? [every(options.analytics?.writeMs ?? ANALYTICS_WRITE_MS, () => usageWriter.write(), log, "usage analytics' write")] : []),
  ];
  return {
    ctx,
    app,
    metrics: ctx.metrics,
    webhooks: sender,
    expiryNotices,
    analytics: { write: async () => usageWriter?.write(), upkeep },
    async close() {
      await Promise.all(jobs.map((job) => job.stop()));
      await sender.close();
      await lastUse.flush();
      await usageWriter?.write();
      await meter.close().catch((error: unknown) => log.warn({ err: error }, "could not give back unspent credits; they count as spent"));
      await unlisten();
    },
  };
}

/** The webhook sender: in a worker thread of its own where asked (PostgreSQL), else on this thread. */
async function startSender(ctx: AppNeeds, options: KeyplaneOptions): Promise<Sender> {
  const w = options.webhooks ?? {};
  const onSent = (result: SendResult, count = 1) => ctx.metrics?.webhookSent(result, count);
  if (w.worker) {
    const setup = { ...w.worker, masterKey: options.secrets.masterKey, allowHttp: ctx.webhooks.allowHttp, allowPrivate: ctx.webhooks.allowPrivate, secrets: [options.secrets.adminToken] };
    return startWebhookWorker(setup, ctx.log, onSent);
  }
  const concurrency = w.sender?.concurrency ?? 32;
  const sender = new WebhookSender({ db: ctx.db, sealer: ctx.sealer, client: w.client ?? httpWebhookClient(ctx.webhooks, { maxSockets: concurrency }), clock: ctx.clock,
    log: ctx.log, ...w.sender, concurrency, onResult: onSent });
  await sender.start();
  return sender;
}

/** Applies pending migrations to the configured database and closes it; returns the versions applied. */
export async function migrateDatabase(config: Pick<Config, "databaseUrl" | "dataDir" | "databaseTimeoutMs">, log: Logger): Promise<number[]> {
  const db = await openDatabase(config, log);
  try {
    return await migrate(db, log, await loadMigrations());
  } finally {
    await db.close();
  }
}
