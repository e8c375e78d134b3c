import { setFlagsFromString } from "node:v8";
import { adminTokenPath, loadSecrets, type Config } from "../config.ts";
import { metricsHandler } from "../http/operations/metrics-server.ts";
import { listen } from "../http/server.ts";
import { createKeyplane, openDatabase } from "../keyplane.ts";
import { createLogger } from "../logging.ts";
import { startOperator } from "../operator/launch.ts";
import { keepTickShape } from "./tick-shape.ts";

/** `keyplane serve`: the REST API, and the operator where a cluster is reachable. Stops cleanly on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<void> {
  // Node's HTTP server and the PostgreSQL client run through the same stream and tick internals, which
  // then see more object shapes per call site than V8 tracks by default (4): past that, a site is
  // looked up generically for the life of the process, and verification slowed by a tenth or more.
  // Set before any request is served (docs/adr/0009-v8-polymorphic-sites.md). And the shapes of
  // nextTick's entries must outlive the quiet moments (docs/adr/0010-tick-shape.md).
  setFlagsFromString("--max-valid-polymorphic-map-count=16");
  if (!keepTickShape()) process.emitWarning("keyplane: no tick seen to keep (docs/adr/0010-tick-shape.md); verification may run slower");
  const secrets = await loadSecrets(config);
  const log = createLogger({ level: config.logLevel, secrets: [secrets.adminToken] });
  if (secrets.adminTokenFrom === "generated") {
    // Shown once, outside the log (log lines never carry it); it is kept in the data dir.
    process.stdout.write(`\nkeyplane admin token (generated, kept in ${adminTokenPath(config)}):\n\n    ${secrets.adminToken}\n\n`);
  } else if (secrets.adminTokenFrom === "data dir") {
    // Every later start says where it is, never what it is.
    process.stdout.write(`\nkeyplane admin token: kept in ${adminTokenPath(config)} (cat it; it is not shown again)\n\n`);
  }
  const db = await openDatabase(config, log);
  // On PostgreSQL, webhooks go out from a worker thread with a pool of its own (src/webhook-worker.ts),
  // and imports run on another (src/import-worker.ts).
  const worker = config.databaseUrl ? { connectionString: config.databaseUrl, timeoutMs: config.databaseTimeoutMs, logLevel: config.logLevel } : undefined;
  const keyplane = await createKeyplane({ db, secrets, runtimeHeader: config.runtimeHeader, log, keyCache: { staleMs: config.staleMs },
    throttle: { failuresPerMinute: config.authFailuresPerMinute }, trustedProxies: config.trustedProxies, authGateway: config.authGateway, metrics: config.metricsPort !== undefined,
    leaks: config.leaks, webhooks: { ...config.webhooks, worker }, importWorker: worker, analytics: config.analytics });
  const http = await listen(keyplane.app, config.port, config.host);
  const metrics = keyplane.metrics && config.metricsPort !== undefined ? await listen(metricsHandler(keyplane.metrics), config.metricsPort, config.host) : undefined;
  const operator = await startOperator(config.operator, keyplane.ctx, log);
  log.info({ url: http.url, metrics: metrics?.url, database: db.kind, operator: operator ? "on" : "off", authGateway: config.authGateway }, "keyplane serving");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: finishing requests in flight");
    await operator?.stop();
    await http.close();
    await metrics?.close();
    await keyplane.close();
    await db.close();
    log.info("stopped");
    log.flush?.();
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}
