import { loadSecrets, type Config } from "../config.ts";
import { metricsHandler } from "../http/metrics-server.ts";
import { listen } from "../http/server.ts";
import { createKeyplane, openDatabase } from "../keyplane.ts";
import { createLogger } from "../logging.ts";
import { startOperator } from "../operator/start.ts";

/** `keyplane serve`: the REST API, and the operator where a cluster is reachable. Stops cleanly on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<void> {
  const secrets = await loadSecrets(config);
  const log = createLogger({ level: config.logLevel, secrets: [secrets.adminToken] });
  if (secrets.generatedAdminToken) {
    // Shown once, outside the log (log lines never carry it); it is kept in the data dir.
    process.stdout.write(`\nkeyplane admin token (generated, kept in ${config.dataDir}/admin-token):\n\n    ${secrets.adminToken}\n\n`);
  }
  const db = await openDatabase(config, log);
  const keyplane = await createKeyplane({ db, secrets, runtimeHeader: config.runtimeHeader, log, keyCache: { staleMs: config.staleMs },
    throttle: { failuresPerMinute: config.authFailuresPerMinute }, trustedProxies: config.trustedProxies, metrics: config.metricsPort !== undefined });
  const http = await listen(keyplane.app, config.port, config.host);
  const metrics = keyplane.metrics && config.metricsPort !== undefined ? await listen(metricsHandler(keyplane.metrics), config.metricsPort, config.host) : undefined;
  const operator = await startOperator(config.operator, keyplane.ctx, log);
  log.info({ url: http.url, metrics: metrics?.url, database: db.kind, operator: operator ? "on" : "off" }, "keyplane serving");

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
