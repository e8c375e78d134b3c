import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** Every child still running: none may outlive the benchmark, however it ends. */
const running = new Set<ChildProcess>();
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));

function start(name: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
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

/** A process whose CPU a measured run counts as its own. */
export type Metered = Pick<Server, "name" | "pid">;

export interface KeyplaneEnv {
  databaseUrl: string;
  masterKey: string;
  adminToken: string;
  dataDir: string;
}

const START = (JSON.parse(readFileSync(`${REPO}package.json`, "utf8")) as { scripts: { start: string } }).scripts.start.split(" ");
/** The node flags `npm start` runs keyplane with (docs/adr/0011-young-generation.md): it is measured as it is run. */
const START_FLAGS = START.filter((word) => word.startsWith("--"));
/** The environment `npm start` gives node, its `NAME=value` words before `node` (MALLOC_ARENA_MAX: docs/scaling.md, "Memory"). */
const START_ENV = Object.fromEntries(START.slice(0, START.indexOf("node")).map((word) => word.split("=")));

export async function startKeyplane(name: string, env: KeyplaneEnv, nodeArgs: string[] = [], moreEnv: Record<string, string> = {}): Promise<Server> {
  const port = await freePort();
  const { child, output } = start(name, [...START_FLAGS, ...nodeArgs, "src/cli/main.ts", "serve"], {
    ...process.env,
    ...START_ENV,
    DATABASE_URL: env.databaseUrl,
    KEYPLANE_MASTER_KEY: env.masterKey,
    KEYPLANE_ADMIN_TOKEN: env.adminToken,
    KEYPLANE_DATA_DIR: env.dataDir,
    KEYPLANE_OPERATOR: "off",
    // Per-request logging is info: off during the benchmark, as a production service under load would run.
    LOG_LEVEL: "warn",
    // The load comes from one address, and the unknown-token figure measures the negative cache, not
    // throttling (which would answer those 429 without a look-up): throttling is out of the way, at the
    // highest limit there is (the unknown-token rounds fail some 30,000 times a second).
    KEYPLANE_AUTH_FAILURES_PER_MINUTE: "1000000000",
    // The webhooks phase's receiver is on 127.0.0.1, over http. Every keyplane of a run may send to it:
    // the processes of one deployment share their settings, and any of them may claim a message.
    KEYPLANE_WEBHOOK_ALLOW_HTTP: "true",
    KEYPLANE_WEBHOOK_ALLOW_PRIVATE: "true",
    PORT: String(port),
    HOST: "127.0.0.1",
    ...moreEnv,
  });
  const url = `http://127.0.0.1:${port}`;
  await until(child, output, async () => (await statusOf(`${url}/readyz`)) === 200, `keyplane ${name}`);
  return { name, url, pid: child.pid!, child, output, stop: stopper(child) };
}

/** The baseline: node:http answering `body` (JSON) to every request. */
export function startBare(body: string, nodeArgs: string[] = []): Promise<Server> {
  return startListening("bare", [...nodeArgs, "bench/bare-server.ts"], { BENCH_BARE_BODY: body }, "bare node:http server");
}

/** The webhooks phase's receiver (bench/receiver.ts). */
export function startReceiver(): Promise<Server> {
  return startListening("receiver", ["bench/receiver.ts"], {}, "webhook receiver");
}

/** A server script of the benchmark's own, which prints `listening <url>` once it does. */
async function startListening(name: string, args: string[], env: Record<string, string>, what: string): Promise<Server> {
  const { child, output } = start(name, args, { ...process.env, ...env });
  let url = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const match = /listening (http:\/\/\S+)/.exec(chunk.toString("utf8"));
    if (match) url = match[1]!;
  });
  await until(child, output, async () => url !== "", what);
  return { name, url, pid: child.pid!, child, output, stop: stopper(child) };
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

// CPU accounting, from /proc: who used the machine's cores during a load run. The machine is shared,
// so "others" (everything but keyplane, the baseline, the bench database's PostgreSQL backends and this
// process) tells how much the figures were disturbed.
const TICK = 100; // USER_HZ: clock ticks per second in /proc on Linux

function ticksOf(statLine: string): number {
  const fields = statLine.slice(statLine.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

function processSeconds(pid: number): number {
  try {
    return ticksOf(readFileSync(`/proc/${pid}/stat`, "utf8")) / TICK;
  } catch {
    return 0;
  }
}

/** CPU seconds of each PostgreSQL backend serving `database` (its process title names it), by pid. */
function backendSeconds(database: string): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.startsWith("postgres: ") && cmdline.includes(` ${database} `)) seconds.set(Number(entry), processSeconds(Number(entry)));
    } catch {
      // gone meanwhile
    }
  }
  return seconds;
}

/** CPU used by the backends alive at the end since `start` (a backend that ended meanwhile is not counted). */
function backendSecondsSince(database: string, start: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of backendSeconds(database)) total += seconds - (start.get(pid) ?? 0);
  return total;
}

function machineSeconds(): { busy: number; total: number } {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = line.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - line[3]! - line[4]!) / TICK, total: total / TICK };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

export interface CpuUse {
  /** Wall-clock seconds, and the CPU seconds each party used meanwhile. */
  seconds: number;
  servers: Record<string, number>;
  postgres: number;
  loadGenerator: number;
  others: number;
  /** Share of the machine's cores busy, 0..1. */
  machineBusy: number;
}

export function cpuMeter(servers: Record<string, number>, database: string): () => CpuUse {
  const startedAt = performance.now();
  const serverStart = Object.fromEntries(Object.entries(servers).map(([name, pid]) => [name, processSeconds(pid)]));
  const postgresStart = backendSeconds(database);
  const selfStart = process.cpuUsage();
  const machineStart = machineSeconds();
  return () => {
    const self = process.cpuUsage(selfStart);
    const machine = machineSeconds();
    const used = Object.fromEntries(Object.entries(servers).map(([name, pid]) => [name, round2(processSeconds(pid) - serverStart[name]!)]));
    const postgres = round2(backendSecondsSince(database, postgresStart));
    const loadGenerator = round2((self.user + self.system) / 1e6);
    const busy = machine.busy - machineStart.busy;
    const ours = Object.values(used).reduce((a, b) => a + b, 0) + postgres + loadGenerator;
    return {
      seconds: round2((performance.now() - startedAt) / 1000),
      servers: used,
      postgres,
      loadGenerator,
      others: round2(Math.max(0, busy - ours)),
      machineBusy: round2(busy / (machine.total - machineStart.total)),
    };
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;
