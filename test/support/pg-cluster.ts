import { execFile } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { appendFile, chown, mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

// A PostgreSQL 15 cluster of a test's own, for the suites that restart, stop or cut the database under
// keyplane: initdb in a temporary directory, postgres on a free 127.0.0.1 port (never the machine's
// server on 5432), trust authentication, settings small enough for a 2-core machine. initdb and
// postgres refuse to run as root: as root, they run as the `postgres` OS user.
export const PG_BIN = process.env.KEYPLANE_PG_BIN ?? "/usr/lib/postgresql/15/bin";

const run = promisify(execFile);
const ADMIN_APP = "pg-cluster-admin";
const POLL_MS = 10;
const READY_WITHIN_MS = 30_000;

/** Why a cluster cannot be made here, or undefined when it can. */
export function clusterUnavailable(): string | undefined {
  for (const tool of ["initdb", "pg_ctl", "postgres"]) {
    if (!existsSync(join(PG_BIN, tool))) return `no PostgreSQL 15 binaries at ${PG_BIN} (${tool} missing; set KEYPLANE_PG_BIN)`;
  }
  if (process.getuid?.() === 0 && !existsSync("/usr/sbin/runuser")) return "running as root without runuser to start PostgreSQL as `postgres`";
  return undefined;
}

export interface Session {
  pid: number;
  applicationName: string;
  /** pg_stat_activity's state: `active`, `idle`, `idle in transaction`... */
  state: string | null;
}

/** A server coming up, on performance.now(): it refused a connection tried at `refusedAt`, accepted one at `acceptingAt`. */
export interface Return {
  refusedAt: number;
  acceptingAt: number;
}

export interface PgCluster {
  port: number;
  /** A connection string to `database` (default `postgres`) as the superuser. */
  url(database?: string): string;
  /** `pg_ctl restart -m fast`: when the restarted server was last seen down, and first accepted a connection. */
  restart(): Promise<Return>;
  /** `pg_ctl stop -m fast`, waiting until the server is gone: when it was. */
  stop(): Promise<number>;
  /** Starts the stopped server: when it was last seen down, and first accepted a connection. */
  start(): Promise<Return>;
  /** The client sessions, other than this helper's own. */
  sessions(): Promise<Session[]>;
  /** pg_terminate_backend of one backend, or of every session of an application_name: the PIDs ended. */
  terminate(target: number | string): Promise<number[]>;
  /**
   * pg_terminate_backend of one backend `ms` from now, timed by the server (pg_sleep), so that it can
   * happen while this process is busy. Resolves once the statement is on its way, to its outcome.
   */
  terminateIn(pid: number, ms: number): Promise<{ ended: Promise<boolean> }>;
  /** A statement on a separate admin connection (ALTER SYSTEM, checks of what keyplane wrote). */
  admin<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  /** Kills the server by its PID and removes its directory (also done when this process exits). */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    if (port !== 5432) return port;
  }
}

export async function startCluster(): Promise<PgCluster> {
  const unavailable = clusterUnavailable();
  if (unavailable) throw new Error(unavailable);
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), "keyplane-pg-"));
  const data = join(dir, "data");
  const owner = asRoot ? await postgresUser() : undefined;
  if (owner) await chown(dir, owner.uid, owner.gid);
  const pgRun = (tool: string, args: string[]) =>
    asRoot ? run("/usr/sbin/runuser", ["-u", "postgres", "--", join(PG_BIN, tool), ...args]) : run(join(PG_BIN, tool), args);

  const port = await freePort();
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const postmasterPid = (): number | undefined => {
    try {
      return Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
    } catch {
      return undefined;
    }
  };
  let destroyed = false;
  const killNow = () => {
    if (destroyed) return;
    destroyed = true;
    const pid = postmasterPid();
    if (pid) signal(pid, "SIGQUIT");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", killNow);

  await pgRun("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    "unix_socket_directories = ''",
    "shared_buffers = 16MB",
    "max_connections = 60",
    "fsync = off",
    "synchronous_commit = off",
    "full_page_writes = off",
    "max_worker_processes = 2",
    "max_parallel_workers = 0",
    "autovacuum = off",
    "log_min_messages = warning",
  ];
  await appendFile(join(data, "postgresql.conf"), settings.join("\n") + "\n");
  const log = join(dir, "server.log");
  const pgCtl = (...args: string[]) => pgRun("pg_ctl", ["-D", data, "-l", log, ...args]);

  const admin = async <R extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<R[]> => {
    const client = new pg.Client({ connectionString: url(), application_name: ADMIN_APP, connectionTimeoutMillis: 2_000 });
    client.on("error", () => undefined); // the server may go away under it: the query says so
    try {
      await client.connect();
      return (await client.query<R>(text, params)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /**
   * Polls until a connection succeeds (pg_ctl's own wait polls only ten times a second): the server was
   * down when the last refused attempt was made, and up when the first one succeeded.
   */
  const accepting = async (): Promise<Return> => {
    const deadline = performance.now() + READY_WITHIN_MS;
    for (let refusedAt = performance.now(); ; ) {
      const triedAt = performance.now();
      try {
        await admin("SELECT 1");
        return { refusedAt, acceptingAt: performance.now() };
      } catch (error) {
        refusedAt = triedAt;
        if (performance.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${READY_WITHIN_MS} ms\n${serverLog()}`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
  };
  const serverLog = () => {
    try {
      return readFileSync(log, "utf8").slice(-2_000);
    } catch {
      return "";
    }
  };

  const cluster: PgCluster = {
    port,
    url,
    async start() {
      await pgCtl("start", "-W");
      return accepting();
    },
    async stop() {
      await pgCtl("stop", "-m", "fast", "-w");
      return performance.now();
    },
    async restart() {
      // pg_ctl waits for the old server to go in any case; -W: not for the new one, polled here instead.
      await pgCtl("restart", "-m", "fast", "-W");
      return accepting();
    },
    async sessions() {
      const rows = await admin<{ pid: number; application_name: string; state: string | null }>(
        "SELECT pid, application_name, state FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> $1 AND pid <> pg_backend_pid()",
        [ADMIN_APP],
      );
      return rows.map((r) => ({ pid: r.pid, applicationName: r.application_name, state: r.state }));
    },
    async terminate(target) {
      const rows =
        typeof target === "number"
          ? await admin<{ pid: number; ended: boolean }>("SELECT $1::int AS pid, pg_terminate_backend($1) AS ended", [target])
          // In the select list, not the WHERE clause, which may call it before it filters.
          : await admin<{ pid: number; ended: boolean }>("SELECT pid, pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1", [target]);
      return rows.filter((r) => r.ended).map((r) => r.pid);
    },
    async terminateIn(pid, ms) {
      const client = new pg.Client({ connectionString: url(), application_name: ADMIN_APP });
      client.on("error", () => undefined);
      await client.connect();
      const ended = client
        .query<{ ended: boolean }>("SELECT pg_sleep($2::float8 / 1000), pg_terminate_backend($1) AS ended", [pid, ms])
        .then((result) => result.rows[0]!.ended)
        .finally(() => client.end().catch(() => undefined));
      // One turn of the event loop: the statement has left.
      await new Promise((resolve) => setImmediate(resolve));
      return { ended };
    },
    admin,
    async destroy() {
      const pid = postmasterPid();
      process.removeListener("exit", killNow);
      if (pid) {
        signal(pid, "SIGQUIT"); // immediate shutdown: the postmaster takes its backends with it
        const deadline = performance.now() + 5_000;
        while (alive(pid) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        if (alive(pid)) signal(pid, "SIGKILL");
      }
      destroyed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run("id", ["-u", "postgres"]);
  const { stdout: group } = await run("id", ["-g", "postgres"]);
  return { uid: Number(stdout.trim()), gid: Number(group.trim()) };
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
