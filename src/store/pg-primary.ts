import pg from "pg";
import type { Logger } from "pino";
import { StoreUnavailable } from "../domain/errors.ts";
import { translateError } from "./errors.ts";
import { hostName, parseHosts, PrimaryChooser, type Host, type HostList, type Role } from "./hosts.ts";

// Connections to the primary only, among the hosts of DATABASE_URL (hosts.ts): a pool for the host
// found primary, replaced (and the old one ended, its connections dropped) when another host is found
// primary; and single connections, for the listener.

/** Whether the server behind a connection takes writes: not in recovery (a standby), not read-only. */
async function roleOf(client: pg.ClientBase): Promise<Role> {
  const { rows } = await client.query<{ writable: boolean }>(
    "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable",
  );
  return rows[0]?.writable ? "primary" : "standby";
}

/**
 * A connection that reached a server that does not take writes: "the database cannot be reached"
 * (errors.ts), under the SQLSTATE PostgreSQL gives a write refused there (25006, read_only_sql_transaction).
 */
class NotPrimary extends Error {
  readonly code = "25006";
  constructor(host: Host) {
    super(`${hostName(host)} is in recovery or read-only`);
  }
}

export interface Primary {
  host: Host;
  pool: pg.Pool;
}

export interface PrimaryPoolOptions {
  connectionString: string;
  /** The pool's settings, but for where it connects. */
  pool: Omit<pg.PoolConfig, "connectionString">;
  timeoutMs: number;
  /** After a round of probes found no primary, how long before the next. */
  retryMs: number;
  log: Logger;
  /** Each new pooled connection, once it is known to be on the primary. */
  onConnect?: (client: pg.ClientBase) => void;
}

// pg-pool's answer when every connection of the pool is in use for longer than the time-out: it says
// nothing of the host, so the primary is not looked for again for it.
const POOL_BUSY = /timeout exceeded when trying to connect/i;

export class PrimaryPool {
  readonly #hosts: HostList;
  readonly #chooser: PrimaryChooser;
  readonly #options: PrimaryPoolOptions;
  #current: Primary | undefined;
  readonly #ending = new Set<Promise<void>>();
  #closed = false;

  constructor(options: PrimaryPoolOptions) {
    this.#options = options;
    this.#hosts = parseHosts(options.connectionString);
    this.#chooser = new PrimaryChooser({
      hosts: this.#hosts.hosts,
      probe: (host) => this.#probe(host),
      timeoutMs: options.timeoutMs,
      retryMs: options.retryMs,
    });
  }

  /** The primary's pool: at once while the primary is known, else once a round of probes has found it. */
  primary(): Primary | Promise<Primary> {
    if (this.#closed) return Promise.reject(new StoreUnavailable("closed"));
    const known = this.#chooser.known;
    if (known && this.#current?.host === known) return this.#current;
    return this.#chooser.primary().then((host) => {
      if (this.#closed) throw new StoreUnavailable("closed");
      return this.#poolOf(host);
    });
  }

  /**
   * A failure of something sent to `primary`: one that says the database cannot be reached (the
   * connection gone, the server refusing, or no longer the primary) makes the next call look for the
   * primary again, so that a failover is followed within one round.
   */
  failed(primary: Primary, error: unknown): void {
    if (!(translateError(error) instanceof StoreUnavailable)) return;
    if (error instanceof Error && POOL_BUSY.test(error.message)) return;
    this.#chooser.forget(primary.host);
  }

  /** A connection of its own to the primary (the listener's), with `config` besides where it goes. */
  async connect(config: Omit<pg.ClientConfig, "connectionString">): Promise<pg.Client> {
    if (this.#closed) throw new StoreUnavailable("closed");
    const host = await this.#chooser.primary();
    const client = new pg.Client({ ...config, connectionString: this.#hosts.urlFor(host) });
    client.on("error", () => undefined); // until its owner listens: a failure here is the connect's
    try {
      await client.connect();
      if ((await roleOf(client)) !== "primary") throw new NotPrimary(host);
      return client;
    } catch (error) {
      this.#chooser.forget(host);
      client.end().catch(() => undefined);
      throw error;
    }
  }

  /** Ends every connection; from now on nothing connects again, and every call is told the store is unavailable. */
  async close(): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    await Promise.all([current?.pool.end(), ...this.#ending]);
  }

  #poolOf(host: Host): Primary {
    if (this.#current?.host === host) return this.#current;
    const previous = this.#current;
    const pool = new pg.Pool({
      ...this.#options.pool,
      connectionString: this.#hosts.urlFor(host),
      // Every new connection asks its server first: one that is not the primary (a standby just after
      // a failover, or the old primary restarted as one) is refused and the primary looked for again.
      onConnect: async (client: pg.ClientBase) => {
        if ((await roleOf(client)) !== "primary") {
          this.#chooser.forget(host);
          throw new NotPrimary(host);
        }
        this.#options.onConnect?.(client);
      },
    });
    // pg-pool reports an idle connection's failure here (and replaces it); postgres.ts logs it, once.
    pool.on("error", () => undefined);
    this.#current = { host, pool };
    if (previous) {
      this.#options.log.warn({ host: hostName(host), was: hostName(previous.host) }, "database primary moved");
      // Its idle connections go now, those in use as they are released: none is used again.
      const ending = previous.pool.end().catch(() => undefined);
      this.#ending.add(ending);
      void ending.finally(() => this.#ending.delete(ending));
    } else if (this.#hosts.hosts.length > 1) {
      this.#options.log.info({ host: hostName(host) }, "database primary found");
    }
    return this.#current;
  }

  async #probe(host: Host): Promise<Role> {
    const { timeoutMs } = this.#options;
    const client = new pg.Client({
      connectionString: this.#hosts.urlFor(host),
      application_name: "keyplane-probe",
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    client.on("error", () => undefined);
    try {
      await client.connect();
      return await roleOf(client);
    } finally {
      client.end().catch(() => undefined);
    }
  }
}
