import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Config, Secrets } from "./config.ts";
import { createSealer } from "./domain/seal.ts";
import { createApp } from "./http/app.ts";
import { withSelfFastPath } from "./http/self-fast-path.ts";
import type { Context } from "./services/context.ts";
import { Verifier, type VerifierOptions } from "./services/verifier.ts";
import type { Database } from "./store/database.ts";
import { listenForKeyChanges } from "./store/key-changes.ts";
import { loadMigrations, migrate } from "./store/migrate.ts";
import { openPglite } from "./store/pglite.ts";
import { openPostgres } from "./store/postgres.ts";

export const VERSION = "0.1.0";

export async function openDatabase(config: Pick<Config, "databaseUrl" | "dataDir">, log: Logger): Promise<Database> {
  return config.databaseUrl
    ? openPostgres({ connectionString: config.databaseUrl, log })
    : openPglite(join(config.dataDir, "pgdata"), log);
}

export interface KeyplaneOptions {
  db: Database;
  secrets: Pick<Secrets, "adminToken" | "masterKey">;
  runtimeHeader: string;
  log: Logger;
  clock?: () => Date;
  verifier?: VerifierOptions;
}

export interface Keyplane {
  ctx: Context;
  /** The HTTP handler: the fast path of GET /keys/self in front of the express app. */
  app: RequestListener;
  /** Stops listening for key changes (the database stays open: it belongs to the caller). */
  close(): Promise<void>;
}

/** The service over an open database: migrates it, wires the use cases and the HTTP app. */
export async function createKeyplane(options: KeyplaneOptions): Promise<Keyplane> {
  const { db, log } = options;
  const migrations = await loadMigrations();
  await migrate(db, log, migrations);
  const verifier = new Verifier(db, options.verifier);
  const ctx: Context = { db, sealer: createSealer(options.secrets.masterKey), verifier, clock: options.clock ?? (() => new Date()), log };
  // Keys changed by any process (this one included) leave the verification cache; if notifications
  // may have been missed, everything does.
  const unlisten = await listenForKeyChanges(db, (change) => verifier.invalidate(change.hash), () => verifier.clear());
  const app = withSelfFastPath(
    ctx,
    createApp(ctx, { adminToken: options.secrets.adminToken, runtimeHeader: options.runtimeHeader, migrations, version: VERSION }),
  );
  return { ctx, app, close: unlisten };
}

export interface Listening {
  server: Server;
  url: string;
  /** Graceful stop: no new connections, requests in flight finish (up to `graceMs`), then it resolves. */
  close(graceMs?: number): Promise<void>;
}

export async function listen(app: RequestListener, port: number, host: string): Promise<Listening> {
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  // Requests Node refuses before any handler runs (a request line or headers over 16 KiB, bad
  // framing) still get the JSON error body.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    const body = JSON.stringify({ status: 400, error: "bad_request", message: "The request could not be read (malformed, or headers over 16 KiB)." });
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shown}:${address.port}`,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        // Keep-alive connections go as soon as they are idle, those in flight once answered; whatever
        // is still open after the grace period is cut.
        const reap = setInterval(() => server.closeIdleConnections(), 50);
        const force = setTimeout(() => server.closeAllConnections(), graceMs).unref();
        server.close(() => {
          clearInterval(reap);
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
