import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

// The servers under test, each a child process of its own: keyplane (`src/cli/main.ts serve`) and the
// bare node:http baseline (bench/bare-server.ts).

export const REPO = fileURLToPath(new URL("../", import.meta.url));

export interface Server {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  /** What the process wrote, for when it fails. */
  output(): string;
  stop(): Promise<void>;
}

/** A port that was free a moment ago (keyplane logs its URL at info level only, and the benchmark runs it at warn). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function start(name: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => `[${name}] ${output}` };
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill("SIGTERM");
    });
}

/** Waits until `ready()` is true, or fails when the process exits or the time is up. */
async function until(child: ChildProcess, output: () => string, ready: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    if (await ready().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what} was not ready in 60 s:\n${output()}`);
}

export interface KeyplaneEnv {
  databaseUrl: string;
  masterKey: string;
  adminToken: string;
  dataDir: string;
}

export async function startKeyplane(name: string, env: KeyplaneEnv, nodeArgs: string[] = []): Promise<Server> {
  const port = await freePort();
  const { child, output } = start(name, [...nodeArgs, "src/cli/main.ts", "serve"], {
    ...process.env,
    DATABASE_URL: env.databaseUrl,
    KEYPLANE_MASTER_KEY: env.masterKey,
    KEYPLANE_ADMIN_TOKEN: env.adminToken,
    KEYPLANE_DATA_DIR: env.dataDir,
    KEYPLANE_OPERATOR: "off",
    // Per-request logging is info: off during the benchmark, as a production service under load would run.
    LOG_LEVEL: "warn",
    PORT: String(port),
    HOST: "127.0.0.1",
  });
  const url = `http://127.0.0.1:${port}`;
  await until(child, output, async () => (await statusOf(`${url}/readyz`)) === 200, `keyplane ${name}`);
  return { name, url, pid: child.pid!, child, output, stop: stopper(child) };
}

/** The baseline: node:http answering `body` (JSON) to every request. */
export async function startBare(body: string): Promise<Server> {
  const { child, output } = start("bare", ["bench/bare-server.ts"], { ...process.env, BENCH_BARE_BODY: body });
  let url = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const match = /listening (http:\/\/\S+)/.exec(chunk.toString("utf8"));
    if (match) url = match[1]!;
  });
  await until(child, output, async () => url !== "", "bare node:http server");
  return { name: "bare", url, pid: child.pid!, child, output, stop: stopper(child) };
}

/** The status of a GET on a connection of its own. */
function statusOf(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on("timeout", function (this: { destroy(error: Error): void }) {
        this.destroy(new Error("timeout"));
      })
      .on("error", reject);
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A process's resident set and its peak (VmRSS, VmHWM), bytes; undefined where /proc is not there. */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
  } catch {
    return undefined;
  }
}

/** Resets a process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0; our own child). */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}
