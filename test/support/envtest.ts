// What controller-runtime's envtest is for Go: a real etcd + kube-apiserver (+ kube-controller-manager
// for garbage collection) on free 127.0.0.1 ports, started and stopped by the tests themselves.
// The binaries come from test/support/envtest-assets.sh, which builds them once from Debian's packages.
import { execFile, execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { generateKeyPair, randomBytes } from "node:crypto";
import { once } from "node:events";
import { accessSync, closeSync, constants, openSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { installCrds, waitFor } from "./kube.ts";

export const defaultCrdDir = fileURLToPath(new URL("../../crds/", import.meta.url));
const run = promisify(execFile);

export const assetsScript = fileURLToPath(new URL("./envtest-assets.sh", import.meta.url));
const binaries = ["etcd", "kube-apiserver", "kube-controller-manager"] as const;

/**
 * The folder meant to hold etcd, kube-apiserver and kube-controller-manager: KEYPLANE_ENVTEST_ASSETS,
 * else the cache that envtest-assets.sh builds into.
 */
export function envtestAssets(env: NodeJS.ProcessEnv = process.env): string {
  return env.KEYPLANE_ENVTEST_ASSETS || execFileSync(assetsScript, ["--folder"], { env, encoding: "utf8" }).trim();
}

/** The binaries `assets` lacks. */
export function missingBinaries(assets: string): string[] {
  return binaries.filter((b) => {
    try {
      accessSync(join(assets, b), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
}

/** Builds the control plane's binaries where they are missing (minutes, once; needs root) and returns their folder. */
export async function buildEnvtestAssets(): Promise<string> {
  // Its progress goes to the test run's stderr: a first build takes minutes, and says so.
  const child = spawn(assetsScript, [], { stdio: ["ignore", "pipe", "inherit"] });
  let folder = "";
  child.stdout.on("data", (chunk: Buffer) => (folder += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`${assetsScript} failed with exit code ${code}`);
  return folder.trim();
}

/** A Kubernetes API for tests: a control plane of its own, or an existing cluster. */
export interface TestCluster {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** https://127.0.0.1:PORT */
  server: string;
  /** The admin bearer token; undefined for an existing cluster whose user authenticates otherwise. */
  token: string | undefined;
  /** True for KEYPLANE_E2E_KUBECONFIG: nothing here was started, and stop() leaves it running. */
  existing: boolean;
  stop(): Promise<void>;
}

export interface ControlPlane extends TestCluster {
  token: string;
  existing: false;
  /** Temporary folder with certificates, etcd data, logs; removed by stop(). */
  dir: string;
  /** What start-up spawned, for tests of the harness itself. */
  processes: ReadonlyArray<{ name: string; pid: number }>;
}

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager: garbage collection, namespace deletion, default ServiceAccounts. */
  withControllerManager?: boolean;
  /** CRD YAML to install and wait for; default the repository's crds/ folder. */
  crdDir?: string;
}

interface Running {
  dir: string;
  watchdog?: ChildProcess;
  children: Array<{ name: string; child: ChildProcess }>;
}

// Everything still running, so that a test that forgets stop() does not leave etcd behind.
const running = new Set<Running>();
let exitHookInstalled = false;

function killAllSync(): void {
  for (const r of running) {
    for (const { child } of r.children) child.kill("SIGKILL");
    r.watchdog?.kill("SIGKILL");
    rmSync(r.dir, { recursive: true, force: true });
  }
  running.clear();
}

/**
 * Starts etcd and kube-apiserver (and kube-controller-manager when asked) from envtestAssets(), with
 * throwaway certificates and an admin token, installs the CRDs of `crdDir` and waits until namespace
 * `default` takes objects. stop() kills it all and removes its folder; so does process exit.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const assets = envtestAssets();
  const missing = missingBinaries(assets);
  if (missing.length > 0) throw new Error(`${assets} lacks ${missing.join(", ")}: run ${assetsScript}`);
  if (!exitHookInstalled) {
    process.on("exit", killAllSync);
    exitHookInstalled = true;
  }
  // etcd fsyncs every write; on tmpfs that costs nothing.
  const base = isWritableDir("/dev/shm") ? "/dev/shm" : tmpdir();
  const r: Running = { dir: await mkdtemp(join(base, "keyplane-envtest-")), children: [] };
  running.add(r);
  const stop = async () => {
    running.delete(r);
    r.watchdog?.kill("SIGKILL");
    await Promise.all(r.children.map(({ child }) => terminate(child)));
    await rm(r.dir, { recursive: true, force: true });
  };
  try {
    r.watchdog = startWatchdog(r.dir);
    const { server, token } = await startEtcdAndApiServer(r, assets);
    const kubeconfigPath = join(r.dir, "kubeconfig");
    await writeFile(kubeconfigPath, kubeconfigYaml(server, await readFile(join(r.dir, "ca.crt")), token), { mode: 0o600 });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    if (opts.withControllerManager) startControllerManager(r, assets, kubeconfigPath);
    await Promise.all([
      installCrds(kubeConfig, opts.crdDir ?? defaultCrdDir),
      waitUntilUsable(kubeConfig, opts.withControllerManager ?? false),
    ]);
    return {
      kubeconfigPath, kubeConfig, server, token, existing: false, dir: r.dir, stop,
      processes: r.children.map(({ name, child }) => ({ name, pid: child.pid ?? -1 })),
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function isWritableDir(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A detached shell that kills what the control plane started once this process is gone, however it
 * went (a SIGKILLed test worker runs no exit hook). Each child's pid is in DIR/<name>.pid.
 */
function startWatchdog(dir: string): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
for f in "$0"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
rm -rf "$0"`;
  const watchdog = spawn("sh", ["-c", script, dir], { detached: true, stdio: "ignore" });
  watchdog.unref();
  return watchdog;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
  await exited;
  clearTimeout(timer);
}

async function writeCertificates(dir: string): Promise<{ token: string }> {
  const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  const serviceAccountKeys = promisify(generateKeyPair)("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  await Promise.all([
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=keyplane-envtest-ca",
      "-keyout", "ca.key", "-out", "ca.crt"),
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
      "-keyout", "apiserver.key", "-out", "apiserver.csr"),
    writeFile(join(dir, "apiserver.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
  ]);
  await openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
    "-days", "2", "-extfile", "apiserver.ext", "-out", "apiserver.crt");
  const { publicKey, privateKey } = await serviceAccountKeys;
  const token = randomBytes(24).toString("hex");
  await Promise.all([
    writeFile(join(dir, "sa.pub"), publicKey),
    writeFile(join(dir, "sa.key"), privateKey, { mode: 0o600 }),
    writeFile(join(dir, "tokens.csv"), `${token},admin,uid-admin,"system:masters"\n`, { mode: 0o600 }),
  ]);
  return { token };
}

/** Distinct ports free right now; another process may still take one first, hence the retries. */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, async () => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return server;
  }));
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

function launch(r: Running, name: string, binary: string, args: string[]): ChildProcess {
  const log = openSync(join(r.dir, `${name}.log`), "a");
  const child = spawn(binary, args, { stdio: ["ignore", log, log] });
  closeSync(log);
  child.on("error", () => {}); // a missing binary shows as an exit, reported with the log
  if (child.pid !== undefined) writeFileSync(join(r.dir, `${name}.pid`), String(child.pid));
  r.children.push({ name, child });
  return child;
}

class StartFailure extends Error {
  readonly portTaken: boolean;
  constructor(message: string, portTaken: boolean) {
    super(message);
    this.portTaken = portTaken;
  }
}

async function startEtcdAndApiServer(r: Running, assets: string): Promise<{ server: string; token: string }> {
  // etcd needs no certificates: start it while openssl works.
  const certificates = writeCertificates(r.dir);
  certificates.catch(() => {}); // awaited below; a failure meanwhile must not crash the process
  for (let attempt = 1; ; attempt++) {
    const [etcdPort, peerPort, apiPort] = await freePorts(3);
    try {
      const etcd = launch(r, "etcd", join(assets, "etcd"), [
        "--name=envtest", `--data-dir=${join(r.dir, "etcd-data")}`,
        `--listen-client-urls=http://127.0.0.1:${etcdPort}`, `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=envtest=http://127.0.0.1:${peerPort}`, "--initial-cluster-state=new",
      ]);
      await waitReady(r, etcd, "etcd", `http://127.0.0.1:${etcdPort}/health`, undefined, (body) => body.includes("true"));
      const { token } = await certificates;
      const server = `https://127.0.0.1:${apiPort}`;
      // --endpoint-reconciler-type=none: 127.0.0.1 is not a valid Endpoints address. --insecure-port=0: TLS only.
      const apiServer = launch(r, "kube-apiserver", join(assets, "kube-apiserver"), [
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", `--secure-port=${apiPort}`, "--insecure-port=0",
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        `--tls-cert-file=${join(r.dir, "apiserver.crt")}`, `--tls-private-key-file=${join(r.dir, "apiserver.key")}`,
        `--client-ca-file=${join(r.dir, "ca.crt")}`, `--token-auth-file=${join(r.dir, "tokens.csv")}`,
        "--authorization-mode=RBAC",
        `--service-account-key-file=${join(r.dir, "sa.pub")}`, `--service-account-signing-key-file=${join(r.dir, "sa.key")}`,
        "--service-account-issuer=https://kubernetes.default.svc", "--api-audiences=https://kubernetes.default.svc",
        "--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none", "--profiling=false",
      ]);
      const ca = await readFile(join(r.dir, "ca.crt"));
      await waitReady(r, apiServer, "kube-apiserver", `${server}/readyz`, { ca, token }, (body) => body.startsWith("ok"));
      return { server, token };
    } catch (err) {
      if (!(err instanceof StartFailure && err.portTaken && attempt < 3)) throw err;
      await Promise.all(r.children.splice(0).map(({ child }) => terminate(child)));
      await rm(join(r.dir, "etcd-data"), { recursive: true, force: true });
    }
  }
}

async function waitReady(
  r: Running, child: ChildProcess, name: string, url: string,
  tls: { ca: Buffer; token: string } | undefined, ok: (body: string) => boolean,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const log = await readFile(join(r.dir, `${name}.log`), "utf8").catch(() => "");
      const tail = log.split("\n").slice(-15).join("\n");
      throw new StartFailure(`${name} exited during start-up:\n${tail}`, /address already in use/.test(log));
    }
    if (ok(await probe(url, tls).catch(() => ""))) return;
    if (Date.now() > deadline) throw new Error(`${name} not ready after 30 s (log: ${join(r.dir, `${name}.log`)})`);
    await sleep(100);
  }
}

async function probe(url: string, tls: { ca: Buffer; token: string } | undefined): Promise<string> {
  if (!tls) return (await fetch(url)).text();
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: tls.ca, headers: { authorization: `Bearer ${tls.token}` }, timeout: 2_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve(res.statusCode === 200 ? body : ""));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
  });
}

function kubeconfigYaml(server: string, ca: Buffer, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster: {server: "${server}", certificate-authority-data: ${ca.toString("base64")}}
users:
- name: admin
  user: {token: ${token}}
contexts:
- name: envtest
  context: {cluster: envtest, user: admin, namespace: default}
current-context: envtest
`;
}

function startControllerManager(r: Running, assets: string, kubeconfigPath: string): void {
  // Serves no port; --controllers='*' brings the garbage collector and the namespace controller.
  launch(r, "kube-controller-manager", join(assets, "kube-controller-manager"), [
    `--kubeconfig=${kubeconfigPath}`, "--port=0", "--secure-port=0", "--leader-elect=false", "--controllers=*",
    "--use-service-account-credentials=false",
    `--service-account-private-key-file=${join(r.dir, "sa.key")}`, `--root-ca-file=${join(r.dir, "ca.crt")}`,
    `--cluster-signing-cert-file=${join(r.dir, "ca.crt")}`, `--cluster-signing-key-file=${join(r.dir, "ca.key")}`,
  ]);
}

/**
 * /readyz can answer before the bootstrap controller has created namespace `default`; a dry-run create
 * proves objects can go there. With the controller manager, also wait for its ServiceAccount `default`.
 */
async function waitUntilUsable(kubeConfig: KubeConfig, withControllerManager: boolean): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await waitFor(async () => {
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "envtest-probe" } }, dryRun: "All" });
    return true;
  }, { timeoutMs: 20_000, intervalMs: 50, what: "namespace default to take objects" });
  if (withControllerManager) {
    await waitFor(() => core.readNamespacedServiceAccount({ namespace: "default", name: "default" }), {
      timeoutMs: 20_000, intervalMs: 100, what: "ServiceAccount default/default",
    });
  }
}
