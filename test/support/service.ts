import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import supertest from "supertest";
import { createKeyplane, type Keyplane, type KeyplaneOptions } from "../../src/keyplane.ts";
import { createLogger } from "../../src/logging.ts";
import type { KeyCacheOptions } from "../../src/services/verification/key-cache.ts";
import type { ThrottleOptions } from "../../src/services/verification/throttle.ts";
import type { PathScopeCacheOptions } from "../../src/services/verification/path-scope-cache.ts";
import type { TrustedProxies } from "../../src/http/verification/client-address.ts";
import { Conformance } from "./conformance.ts";
import { openTestDatabase, type Backend, type TestDatabase } from "./databases.ts";
import { openPostgres } from "../../src/store/postgres.ts";

let conformance: { text: string; checker: Conformance } | undefined;

/** The checker of the document this app serves (one per document: building one compiles schemas). */
async function conformanceOf(app: Keyplane["app"]): Promise<Conformance> {
  const text = (await supertest(app).get("/openapi.json")).text;
  if (conformance?.text !== text) conformance = { text, checker: new Conformance(JSON.parse(text)) };
  return conformance.checker;
}

// A keyplane over a new database, in this process, for HTTP tests through supertest. Every log line
// it writes is kept in `logs`, so suites can assert what was (and was not) logged.
export interface TestService extends Keyplane {
  backend: Backend;
  database: TestDatabase;
  adminToken: string;
  masterKey: Buffer;
  logs: string[];
  log: Logger;
  /** A request with `token` as its bearer token. */
  as(token: string): ReturnType<typeof bearer>;
  /** A request with the admin token. */
  admin: ReturnType<typeof bearer>;
  stop(): Promise<void>;
}

function bearer(app: Keyplane["app"], token: string) {
  const agent = supertest(app);
  return {
    get: (path: string) => agent.get(path).set("Authorization", `Bearer ${token}`),
    delete: (path: string) => agent.delete(path).set("Authorization", `Bearer ${token}`),
    post: (path: string, body?: object) => agent.post(path).set("Authorization", `Bearer ${token}`).send(body),
    put: (path: string, body?: object) => agent.put(path).set("Authorization", `Bearer ${token}`).send(body),
  };
}

export interface TestServiceOptions {
  clock?: () => Date;
  keyCache?: KeyCacheOptions;
  runtimeHeader?: string;
  invokeTimeoutMs?: number;
  database?: TestDatabase;
  masterKey?: Buffer;
  adminToken?: string;
  /** The background jobs' intervals; tests that drive them by hand set these out of the way. */
  lastUseFlushMs?: number;
  expirySweepMs?: number;
  /** Failed-authentication throttling: off in effect unless a suite sets a limit (the suites fail a lot from one address). */
  throttle?: ThrottleOptions;
  trustedProxies?: TrustedProxies;
  /** The gateway whose headers /auth reads (nginx, as `keyplane serve` by default). */
  authGateway?: KeyplaneOptions["authGateway"];
  pathScopes?: PathScopeCacheOptions;
  /** Keep Prometheus metrics (off by default, as in `keyplane serve` without KEYPLANE_METRICS_PORT). */
  metrics?: boolean;
  /** Leak response: the default policy and grace, and where (or how) GitHub's signing keys are fetched. */
  leaks?: KeyplaneOptions["leaks"];
  /** Webhooks: what they may reach, their client and sender (tests of delivery allow 127.0.0.1 and http). */
  webhooks?: KeyplaneOptions["webhooks"];
  /** Usage analytics: counting, retention, how often counts are written (tests write by hand: the default is out of the way). */
  analytics?: KeyplaneOptions["analytics"];
  /** On PostgreSQL, import on a worker thread of its own, as `keyplane serve` does (src/import-worker.ts); on PGlite, on this thread regardless. */
  importWorker?: boolean;
}

export function captureLogger(logs: string[], secrets: string[] = []): Logger {
  return createLogger({ level: "debug", secrets, destination: { write: (line: string) => void logs.push(line) } });
}

export async function startService(backend: Backend, options: TestServiceOptions = {}): Promise<TestService> {
  const logs: string[] = [];
  const adminToken = options.adminToken ?? "kpa_test_" + randomBytes(24).toString("hex");
  const masterKey = options.masterKey ?? randomBytes(32);
  const log = captureLogger(logs, [adminToken]);
  const database = options.database ?? (await openTestDatabase(backend, log));
  const keyplane = await createKeyplane({
    db: database.db,
    secrets: { adminToken, masterKey },
    runtimeHeader: options.runtimeHeader ?? "X-SVC-APIKey",
    invokeTimeoutMs: options.invokeTimeoutMs,
    log,
    clock: options.clock,
    keyCache: options.keyCache,
    lastUseFlushMs: options.lastUseFlushMs,
    expirySweepMs: options.expirySweepMs,
    throttle: options.throttle ?? { failuresPerMinute: 1_000_000 },
    trustedProxies: options.trustedProxies,
    authGateway: options.authGateway,
    pathScopes: options.pathScopes,
    metrics: options.metrics,
    leaks: options.leaks,
    webhooks: options.webhooks,
    analytics: { writeMs: 3_600_000, ...options.analytics },
    importWorker: options.importWorker && database.url ? { connectionString: database.url, timeoutMs: 5_000, logLevel: "warn" } : undefined,
  });
  // Every answer this service gives is checked against its own /openapi.json (conformance.ts).
  const app = (await conformanceOf(keyplane.app)).wrap(keyplane.app);
  return {
    ...keyplane,
    app,
    backend,
    database,
    adminToken,
    masterKey,
    logs,
    log,
    as: (token) => bearer(app, token),
    admin: bearer(app, adminToken),
    async stop() {
      await keyplane.close();
      await database.drop();
    },
  };
}

/**
 * Another keyplane on the same database, as a second replica would be: on PostgreSQL with a pool and
 * a notification connection of its own; on PGlite (one connection per process) on the same one.
 * Stopping it leaves the database to `svc`.
 */
export async function startPeer(svc: TestService, options: Omit<TestServiceOptions, "database" | "masterKey" | "adminToken"> = {}): Promise<TestService> {
  const db = svc.database.url ? openPostgres({ connectionString: svc.database.url, log: svc.log }) : svc.database.db;
  const database: TestDatabase = { db, url: svc.database.url, drop: async () => (svc.database.url ? db.close() : undefined) };
  return startService(svc.backend, { ...options, database, masterKey: svc.masterKey, adminToken: svc.adminToken });
}
