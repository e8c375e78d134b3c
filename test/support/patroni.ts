import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, openSync, readFileSync, rmSync, closeSync } from "node:fs";
import { chown, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import pg from "pg";
import { PG_BIN } from "./pg-cluster.ts";

// A PostgreSQL made highly available by Patroni, of a test's own: etcd (Debian's etcd-server) and three
// Patroni nodes (Debian's patroni) over PostgreSQL 15, all on free 127.0.0.1 ports, data in a temporary
// directory. Settings small for a 2-core machine (16 MB of shared buffers), and Patroni's loop short
// (ttl 5 s, loop_wait 1 s, retry_timeout 2 s) so that a failover takes seconds. synchronous_mode is on:
// a commit waits for the synchronous standby, so a failover loses no acknowledged write.
//
// node1 and node2 take turns as leader; node3 is a replica that is never promoted nor synchronous
// (tags nofailover and nosync), so that each failover's new leader is known beforehand, and keyplane
// still has a standby among its hosts to pass over. PostgreSQL refuses to run as root: as root,
// everything runs as the `postgres` OS user. Each process is stopped by its PID, also when the test
// process exits.
export const PATRONI = process.env.KEYPLANE_PATRONI ?? "/usr/bin/patroni";
export const ETCD = process.env.KEYPLANE_ETCD ?? "/usr/bin/etcd";

const POLL_MS = 20;
const STARTED_WITHIN_MS = 90_000;

/** Why a cluster cannot be made here, or undefined when it can. */
export function patroniUnavailable(): string | undefined {
  if (!existsSync(PATRONI)) return `no patroni at ${PATRONI} (apt-get install patroni; or set KEYPLANE_PATRONI)`;
  if (!existsSync(ETCD)) return `no etcd at ${ETCD} (apt-get install etcd-server; or set KEYPLANE_ETCD)`;
  for (const tool of ["initdb", "pg_ctl", "postgres", "pg_basebackup", "pg_rewind"]) {
    if (!existsSync(join(PG_BIN, tool))) return `no PostgreSQL 15 binaries at ${PG_BIN} (${tool} missing; set KEYPLANE_PG_BIN)`;
  }
  return undefined;
}

export interface PatroniNode {
  name: string;
  /** PostgreSQL's port. */
  port: number;
  /** Patroni's REST API. */
  apiPort: number;
  /** A connection string to this node alone. */
  url(database?: string): string;
}

export interface Member {
  name: string;
  role: "leader" | "sync_standby" | "replica" | string;
  state: string;
}

export interface PatroniCluster {
  nodes: [PatroniNode, PatroniNode, PatroniNode];
  /** A connection string naming the three nodes (as keyplane's DATABASE_URL), to `database` as the superuser. */
  url(database?: string): string;
  /** The members as Patroni sees them (from any node that answers). */
  members(): Promise<Member[]>;
  /** Waits until `leader` leads, with `sync` as its synchronous standby, every running node streaming. */
  settled(leader: string, sync: string): Promise<void>;
  /** SIGKILLs a node's Patroni and its postmaster: when. */
  kill(node: PatroniNode): number;
  /** Starts a killed node's Patroni again: it rejoins as a replica. */
  start(node: PatroniNode): Promise<void>;
  /** Tries a write of its own (PROBE_WRITE) on `node` every `everyMs` until it is taken: when. */
  acceptsWrites(node: PatroniNode, everyMs: number): Promise<number>;
  /** A statement on `node` (the leader by default), as the superuser. */
  admin<R extends pg.QueryResultRow>(text: string, params?: unknown[], node?: PatroniNode): Promise<R[]>;
  /** The last lines of a node's Patroni log. */
  log(node: PatroniNode): string;
  /** Stops every process by its PID and removes the directory (also done when this process exits). */
  destroy(): Promise<void>;
}

/** `n` distinct free ports (never 5432), all held until each is known, so that none is given twice. */
async function freePorts(n: number): Promise<number[]> {
  const servers = [];
  const ports: number[] = [];
  while (ports.length < n) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    const port = (server.address() as { port: number }).port;
    if (port !== 5432) ports.push(port);
  }
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return { uid: Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), gid: Number(execFileSync("id", ["-g", "postgres"]).toString().trim()) };
}

function signal(pid: number | undefined, name: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A write that tells when a node takes writes (the failover suite and bench/failover.ts): a row of a table made at the start. */
export const PROBE_WRITE = "INSERT INTO failover_probe DEFAULT VALUES";

function nodeConfig(o: { scope: string; name: string; dir: string; port: number; apiPort: number; etcdPort: number; promotable: boolean }): string {
  const q = JSON.stringify;
  // JSON is YAML: no YAML library needed to write it.
  return q({
    scope: o.scope,
    namespace: "/keyplane-test/",
    name: o.name,
    log: { level: "INFO" },
    watchdog: { mode: "off" },
    restapi: { listen: `127.0.0.1:${o.apiPort}`, connect_address: `127.0.0.1:${o.apiPort}` },
    etcd3: { host: `127.0.0.1:${o.etcdPort}` },
    bootstrap: {
      dcs: {
        ttl: 5,
        loop_wait: 1,
        retry_timeout: 2,
        maximum_lag_on_failover: 1048576,
        synchronous_mode: true,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            shared_buffers: "16MB",
            max_connections: 100,
            max_worker_processes: 4,
            max_parallel_workers: 0,
            max_wal_senders: 6,
            max_replication_slots: 6,
            wal_keep_size: "128MB",
            wal_log_hints: "on",
            autovacuum: "off",
            fsync: "off",
            log_min_messages: "warning",
          },
        },
      },
      initdb: [{ encoding: "UTF8" }, { locale: "C" }, { auth: "trust" }],
    },
    postgresql: {
      listen: `127.0.0.1:${o.port}`,
      connect_address: `127.0.0.1:${o.port}`,
      data_dir: join(o.dir, "data"),
      bin_dir: PG_BIN,
      pgpass: join(o.dir, "pgpass"),
      authentication: {
        superuser: { username: "postgres", password: "postgres" },
        replication: { username: "replicator", password: "replicator" },
        rewind: { username: "postgres", password: "postgres" },
      },
      parameters: { unix_socket_directories: o.dir },
      pg_hba: ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication replicator 127.0.0.1/32 trust"],
    },
    tags: { nofailover: !o.promotable, nosync: !o.promotable, noloadbalance: false, clonefrom: false },
  });
}

export async function startPatroni(): Promise<PatroniCluster> {
  const unavailable = patroniUnavailable();
  if (unavailable) throw new Error(unavailable);
  const owner = postgresUser();
  const dir = await mkdtemp(join(tmpdir(), "keyplane-patroni-"));
  if (owner) await chown(dir, owner.uid, owner.gid);
  const children = new Set<ChildProcess>();
  const postmasterPid = (nodeDir: string): number | undefined => {
    try {
      return Number(readFileSync(join(nodeDir, "data", "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
    } catch {
      return undefined;
    }
  };
  const run = (name: string, command: string, args: string[]): ChildProcess => {
    const out = openSync(join(dir, `${name}.log`), "a");
    const child = spawn(command, args, {
      stdio: ["ignore", out, out],
      ...(owner ?? {}),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" },
    });
    closeSync(out);
    children.add(child);
    child.once("exit", () => children.delete(child));
    return child;
  };

  const nodes: PatroniNode[] = [];
  const nodeDirs = new Map<string, string>();
  const patronis = new Map<string, ChildProcess>();
  let destroyed = false;
  const killNow = () => {
    if (destroyed) return;
    destroyed = true;
    for (const child of children) signal(child.pid, "SIGKILL");
    for (const nodeDir of nodeDirs.values()) signal(postmasterPid(nodeDir), "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", killNow);

  try {
    const [etcdPort, peerPort, ...nodePorts] = (await freePorts(8)) as [number, number, ...number[]];
    const etcdDir = join(dir, "etcd");
    run("etcd", ETCD, [
      "--name", "etcd", "--data-dir", etcdDir,
      "--listen-client-urls", `http://127.0.0.1:${etcdPort}`, "--advertise-client-urls", `http://127.0.0.1:${etcdPort}`,
      "--listen-peer-urls", `http://127.0.0.1:${peerPort}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPort}`,
      "--initial-cluster", `etcd=http://127.0.0.1:${peerPort}`, "--log-level", "warn",
    ]);
    for (const [i, name] of ["node1", "node2", "node3"].entries()) {
      const [port, apiPort] = [nodePorts[2 * i]!, nodePorts[2 * i + 1]!];
      const nodeDir = join(dir, name);
      await mkdir(nodeDir, { mode: 0o700 });
      if (owner) await chown(nodeDir, owner.uid, owner.gid);
      await writeFile(join(dir, `${name}.yml`), nodeConfig({ scope: "keyplane", name, dir: nodeDir, port, apiPort, etcdPort, promotable: i < 2 }));
      nodeDirs.set(name, nodeDir);
      nodes.push({ name, port, apiPort, url: (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}` });
    }
    const startNode = (node: PatroniNode) => patronis.set(node.name, run(node.name, PATRONI, [join(dir, `${node.name}.yml`)]));

    const members = async (): Promise<Member[]> => {
      for (const node of nodes) {
        try {
          const res = await fetch(`http://127.0.0.1:${node.apiPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
          if (res.ok) return ((await res.json()) as { members: Member[] }).members;
        } catch {
          // this node's API is down: ask the next
        }
      }
      return [];
    };
    const log = (node: PatroniNode): string => {
      try {
        return readFileSync(join(dir, `${node.name}.log`), "utf8").slice(-3_000);
      } catch {
        return "";
      }
    };
    const settled = async (leader: string, sync: string): Promise<void> => {
      const deadline = performance.now() + STARTED_WITHIN_MS;
      for (;;) {
        const seen = await members();
        const running = seen.filter((m) => m.state === "running" || m.state === "streaming");
        const ok =
          seen.some((m) => m.name === leader && m.role === "leader" && m.state === "running") &&
          seen.some((m) => m.name === sync && m.role === "sync_standby" && (m.state === "running" || m.state === "streaming")) &&
          running.length === seen.length;
        if (ok) return;
        if (performance.now() > deadline) {
          throw new Error(`Patroni did not settle with ${leader} leading and ${sync} synchronous: ${JSON.stringify(seen)}\n${nodes.map(log).join("\n")}`);
        }
        await hold(POLL_MS * 5);
      }
    };
    const [node1, node2, node3] = nodes as [PatroniNode, PatroniNode, PatroniNode];
    // node1 first, so that it bootstraps the cluster and leads; the others clone it.
    startNode(node1);
    const deadline = performance.now() + STARTED_WITHIN_MS;
    while (!(await members()).some((m) => m.name === "node1" && m.role === "leader" && m.state === "running")) {
      if (performance.now() > deadline) throw new Error(`node1 did not bootstrap\n${log(node1)}`);
      await hold(POLL_MS * 5);
    }
    startNode(node2);
    startNode(node3);
    await settled("node1", "node2");

    const cluster: PatroniCluster = {
      nodes: [node1, node2, node3],
      url: (database = "postgres") => `postgres://postgres@${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}/${database}`,
      members,
      settled,
      kill(node) {
        const at = performance.now();
        signal(patronis.get(node.name)?.pid, "SIGKILL");
        signal(postmasterPid(nodeDirs.get(node.name)!), "SIGKILL");
        patronis.delete(node.name);
        return at;
      },
      async start(node) {
        // The killed postmaster's backends go once they notice; a new postmaster waits for none of them.
        startNode(node);
      },
      async acceptsWrites(node, everyMs) {
        for (;;) {
          try {
            await cluster.admin(PROBE_WRITE, [], node);
            return performance.now();
          } catch {
            await hold(everyMs);
          }
        }
      },
      async admin<R extends pg.QueryResultRow>(text: string, params: unknown[] = [], node?: PatroniNode): Promise<R[]> {
        const leader = (await members()).find((m) => m.role === "leader")?.name;
        const on = node ?? nodes.find((n) => n.name === leader);
        if (!on) throw new Error("no leader to ask");
        const client = new pg.Client({ connectionString: on.url(), connectionTimeoutMillis: 2_000 });
        client.on("error", () => undefined);
        try {
          await client.connect();
          return (await client.query<R>(text, params)).rows;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      log,
      async destroy() {
        process.removeListener("exit", killNow);
        const waits = [...children].map((child) => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once("exit", resolve))));
        for (const child of children) signal(child.pid, "SIGKILL");
        for (const nodeDir of nodeDirs.values()) signal(postmasterPid(nodeDir), "SIGKILL");
        await Promise.race([Promise.all(waits), hold(5_000)]);
        destroyed = true;
        rmSync(dir, { recursive: true, force: true });
      },
    };
    await cluster.admin("CREATE TABLE failover_probe (at timestamptz DEFAULT now())");
    return cluster;
  } catch (error) {
    killNow();
    process.removeListener("exit", killNow);
    throw error;
  }
}
