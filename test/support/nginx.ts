import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type RequestListener } from "node:http";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listen, type Listening } from "../../src/http/server.ts";

// A real nginx (Debian's, with auth_request) for the gateway tests and the benchmark: started as a
// child process, not a daemon, with its configuration, pid file and temporary files in a directory of
// its own and its log on stderr, listening on a free port.
export const NGINX = process.env.KEYPLANE_NGINX ?? "/usr/sbin/nginx";

/** Why nginx cannot be used here, or undefined when it can. */
export function nginxMissing(): string | undefined {
  return existsSync(NGINX) ? undefined : `nginx is not installed at ${NGINX} (apt-get install nginx, or set KEYPLANE_NGINX)`;
}

/** The shipped configuration (deploy/nginx/keyplane.conf), with its addresses replaced by these. */
export async function shippedConfig(addresses: { listen: number; keyplane: string; api: string }): Promise<string> {
  const text = await readFile(new URL("../../deploy/nginx/keyplane.conf", import.meta.url), "utf8");
  return text
    .replace("server 127.0.0.1:8080;", `server ${addresses.keyplane};`)
    .replace("server 127.0.0.1:9000;", `server ${addresses.api};`)
    .replace("listen 8000;", `listen 127.0.0.1:${addresses.listen};`);
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Nginx {
  url: string;
  /** What nginx wrote to stderr. */
  log(): string;
  /** Its processes, the master and its worker (whose CPU the benchmark counts as nginx's). */
  pids(): number[];
  stop(): Promise<void>;
}

/** nginx serving `servers` (the inside of an http {} block) on `port`, started once it accepts connections. */
export async function startNginx(servers: string, port: number): Promise<Nginx> {
  const dir = await mkdtemp(join(tmpdir(), "keyplane-nginx-"));
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) => `${kind}_temp_path ${join(dir, kind)};`).join("\n  ");
  await writeFile(
    join(dir, "nginx.conf"),
    `worker_processes 1;\npid ${join(dir, "nginx.pid")};\nerror_log stderr warn;\nevents { worker_connections 4096; }\n` +
      // Clients' connections are not closed every 1,000 requests (nginx's default): a load generator
      // would count the request it had sent on one being closed as an error.
      `http {\n  access_log off;\n  keepalive_requests 1000000;\n  ${temp}\n${servers}\n}\n`,
  );
  const child: ChildProcess = spawn(NGINX, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", "stderr", "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, "exit");
  try {
    await Promise.race([accepting(port), exited.then(() => Promise.reject(new Error(`nginx exited:\n${stderr}`)))]);
  } catch (error) {
    child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    log: () => stderr,
    pids: () => [child.pid!, ...childrenOf(child.pid!)],
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGQUIT");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").split(" ").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Resolves once something accepts connections on the port (nginx has no readiness signal of its own). */
async function accepting(port: number): Promise<void> {
  for (;;) {
    const connected = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (connected) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export interface Upstream {
  address: string;
  /** Every request that reached it: method, url, headers. */
  seen: { method: string; url: string; headers: IncomingHttpHeaders }[];
  /** How many connections it has accepted. */
  connections(): number;
  /** Holds every answer until `count` requests are waiting, then answers them all at once (0: answer at once). */
  holdUntil(count: number): void;
  close(): Promise<void>;
}

/** The API behind the gateway: answers 200 "upstream" to anything, and records what reached it. */
export async function startUpstream(): Promise<Upstream> {
  const seen: Upstream["seen"] = [];
  let held: (() => void)[] = [];
  let holding = 0;
  let connections = 0;
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    held.push(() => res.end("upstream"));
    if (held.length < holding) return;
    for (const answer of held) answer();
    held = [];
  });
  server.on("connection", () => connections++);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    holdUntil: (count) => (holding = count),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

export interface Gateway {
  /** keyplane, as nginx reaches it. */
  keyplane: Listening;
  upstream: Upstream;
  nginx: Nginx;
  stop(): Promise<void>;
}

/**
 * The gateway tests' set-up: keyplane's `app` listening on 127.0.0.1, an upstream of the test's own,
 * and nginx with the shipped configuration in front of the upstream, asking keyplane (auth_request).
 */
export async function startGateway(app: RequestListener): Promise<Gateway> {
  const keyplane = await listen(app, 0, "127.0.0.1");
  const upstream = await startUpstream();
  const stopBoth = async () => {
    await upstream.close();
    await keyplane.close(0);
  };
  try {
    const port = await freePort();
    const nginx = await startNginx(await shippedConfig({ listen: port, keyplane: new URL(keyplane.url).host, api: upstream.address }), port);
    return {
      keyplane,
      upstream,
      nginx,
      async stop() {
        await nginx.stop();
        await stopBoth();
      },
    };
  } catch (error) {
    await stopBoth();
    throw error;
  }
}
