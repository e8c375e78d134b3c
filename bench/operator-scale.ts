import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import pino from "pino";
import { GROUP, CRD_VERSION, MANAGED_BY_LABEL, PLURAL, type ApiKey } from "../src/operator/resource/apikey.ts";
import { Informer, type ListPage } from "../src/operator/kube/informer.ts";
import { CUSTOMERS_ANNOTATION } from "../src/operator/resource/namespace-binding.ts";
import { startControlPlane, type ControlPlane } from "../test/support/envtest.ts";
import { createTestNamespace } from "../test/support/kube.ts";
import { createBenchDatabase, DEFAULT_DATABASE_URL, type BenchDatabase } from "./database.ts";
import { memoryOf, REPO, sleep, startKeyplane, type Server } from "./processes.ts";

// `npm run bench:operator`: the operator at scale on a real control plane (test/support/envtest.ts:
// etcd and kube-apiserver v1.20, no controller manager). One `keyplane serve` with its operator on
// (as deploy/ runs it, on PostgreSQL), then COUNT ApiKeys applied at once, as fast as the API server
// takes them; measured from the first create: when every one is Ready, and the keyplane process's
// resident memory (VmRSS sampled, and its peak VmHWM) before, during and after. Targets: all Ready
// within 30 s for 1,000, and at most 256 MiB. `--runs N` repeats it (a fresh keyplane, database and
// namespace each time, on the same control plane) and reports the median, the machine being shared;
// `--node-flags="..."` adds flags to keyplane's node (its own are npm start's). Writes
// bench/results/operator-scale.json and prints a Markdown table (docs/operator.md, "Scale").

const TARGET_READY_MS = 30_000;
const TARGET_RSS_BYTES = 256 * 1024 * 1024;
/** Creates in flight at once: "at once", as a GitOps tool syncing a large application would send them. */
const APPLY_CONCURRENCY = 50;
/** How often Ready is counted (from a watch) and memory read. */
const SAMPLE_MS = 100;
/** A run not settled by then is a failure. */
const GIVE_UP_MS = 300_000;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    count: { type: "string", default: "1000" },
    runs: { type: "string", default: "1" },
    out: { type: "string" },
    "node-flags": { type: "string", default: "" },
  },
});
const COUNT = Number(values.count);
const RUNS = Number(values.runs);
const NODE_FLAGS = values["node-flags"].split(" ").filter(Boolean);
const OUT = resolve(values.out ?? join(REPO, "bench/results/operator-scale.json"));
const MiB = (bytes: number) => Math.round(bytes / 1024 / 1024);

interface Sample {
  atMs: number;
  ready: number;
  rss: number;
}

async function main(): Promise<void> {
  const plane = await startControlPlane({ withControllerManager: false });
  try {
    const runs: Run[] = [];
    for (let i = 0; i < RUNS; i++) {
      runs.push(await oneRun(plane));
      console.log(table([runs.at(-1)!], `run ${i + 1} of ${RUNS}`));
    }
    const median = medianRun(runs);
    const result = { at: new Date().toISOString(), count: COUNT, cores: availableParallelism(), nodeFlags: NODE_FLAGS, median, runs };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    if (RUNS > 1) console.log(table([median], `median of ${RUNS} runs`));
    if (runs.some((r) => r.problems.length > 0)) process.exitCode = 1;
  } finally {
    await plane.stop();
  }
}

/** One keyplane, on a database and in a namespace of its own, and COUNT ApiKeys. */
async function oneRun(plane: ControlPlane): Promise<Run> {
  let keyplane: Server | undefined;
  let db: BenchDatabase | undefined;
  let dataDir: string | undefined;
  try {
    db = await createBenchDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
    dataDir = await mkdtemp(join(tmpdir(), "keyplane-bench-operator-"));
    // The ApiKeys name customer acme, which their namespace must list (docs/operator.md, "Namespaces and customers").
    const namespace = await createTestNamespace(plane.kubeConfig, "scale", { [CUSTOMERS_ANNOTATION]: "acme" });
    const adminToken = randomBytes(24).toString("hex");
    keyplane = await startKeyplane("operator", { databaseUrl: db.url, masterKey: randomBytes(32).toString("hex"), adminToken, dataDir }, NODE_FLAGS, {
      KEYPLANE_OPERATOR: "on",
      KUBECONFIG: plane.kubeconfigPath,
      KEYPLANE_WATCH_NAMESPACE: namespace,
      KEYPLANE_LEASE_NAMESPACE: namespace,
    });
    return await measure(plane, keyplane, namespace, adminToken);
  } finally {
    await keyplane?.stop().catch(() => undefined);
    await db?.drop().catch(() => undefined);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

type Run = Awaited<ReturnType<typeof measure>>;

/** The run of the median all-Ready time (a run that never got there counts as the slowest). */
function medianRun(runs: Run[]): Run {
  const sorted = [...runs].sort((a, b) => (a.allReadyMs ?? Infinity) - (b.allReadyMs ?? Infinity));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

async function measure(plane: ControlPlane, keyplane: Server, namespace: string, adminToken: string) {
  const objects = plane.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = plane.kubeConfig.makeApiClient(CoreV1Api);
  const crd = { group: GROUP, version: CRD_VERSION, plural: PLURAL, namespace };
  const create = (name: string) =>
    objects.createNamespacedCustomObject({ ...crd, body: { apiVersion: `${GROUP}/${CRD_VERSION}`, kind: "ApiKey", metadata: { name }, spec: { customer: "acme" } } });
  // Ready is counted from a watch, as a dashboard would see it: listing every ApiKey again and again would
  // load the API server that is measured.
  const ready = new Set<string>();
  const watching = new Informer<ApiKey>({
    name: "bench-apikeys",
    kubeConfig: plane.kubeConfig,
    path: `/apis/${GROUP}/${CRD_VERSION}/namespaces/${namespace}/${PLURAL}`,
    list: (page) => objects.listNamespacedCustomObject({ ...crd, ...page }) as Promise<ListPage<ApiKey>>,
    onChange: (_type, apiKey) => {
      const isReady = apiKey.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      if (isReady) ready.add(apiKey.metadata.name ?? "");
    },
    log: pino({ level: "warn" }),
    backoff: { baseMs: 100, maxMs: 1_000, jitter: 0 },
  });
  await watching.start();

  const customer = await fetch(`${keyplane.url}/admin/customers`, {
    method: "POST", headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ name: "acme" }),
  });
  if (customer.status !== 201) throw new Error(`POST /admin/customers answered ${customer.status}`);
  // The operator leads and its caches are synced once a first ApiKey is Ready; that one is not counted.
  await create("warm-up");
  await until(async () => ready.size === 1, 60_000, "the operator to make its first ApiKey Ready");
  await sleep(2_000);
  const idle = memoryOf(keyplane.pid);

  const cpu = cpuMeter([{ name: "keyplane", pid: keyplane.pid }, ...plane.processes]);
  const names = Array.from({ length: COUNT }, (_, i) => `svc-${String(i).padStart(4, "0")}`);
  const samples: Sample[] = [];
  const loadBefore = loadavg()[0]!;
  const start = performance.now();
  let applyMs = 0;
  const applying = (async () => {
    let next = 0;
    await Promise.all(Array.from({ length: APPLY_CONCURRENCY }, async () => {
      while (next < names.length) await create(names[next++]!);
    }));
    applyMs = performance.now() - start;
  })();
  let allReadyMs: number | undefined;
  while (performance.now() - start < GIVE_UP_MS) {
    // The warm-up ApiKey is not counted.
    const readyNow = ready.size - 1;
    samples.push({ atMs: Math.round(performance.now() - start), ready: readyNow, rss: memoryOf(keyplane.pid)?.rss ?? NaN });
    if (readyNow === COUNT) {
      allReadyMs = performance.now() - start;
      break;
    }
    await sleep(SAMPLE_MS);
  }
  await applying;
  const cpuSeconds = cpu.read();
  await watching.stop();
  await sleep(5_000);
  const settled = memoryOf(keyplane.pid);

  const secrets = await core.listNamespacedSecret({ namespace, labelSelector: `${MANAGED_BY_LABEL}=keyplane` });
  const problems: string[] = [];
  if (allReadyMs === undefined) problems.push(`only ${samples.at(-1)?.ready ?? 0} of ${COUNT} ApiKeys Ready after ${GIVE_UP_MS / 1000} s`);
  if (secrets.items.length !== COUNT + 1) problems.push(`${secrets.items.length} Secrets for ${COUNT + 1} ApiKeys`);
  const peakRss = Math.max(settled?.hwm ?? NaN, ...samples.map((s) => s.rss));
  return {
    // The machine's load average (1 min) before and after: other work on a shared machine moves the figures.
    load: [Math.round(loadBefore * 10) / 10, Math.round(loadavg()[0]! * 10) / 10],
    applyMs: Math.round(applyMs),
    allReadyMs: allReadyMs === undefined ? null : Math.round(allReadyMs),
    rssIdleMiB: MiB(idle?.rss ?? NaN),
    rssPeakMiB: MiB(peakRss),
    rssSettledMiB: MiB(settled?.rss ?? NaN),
    cpuSeconds,
    targets: { allReadyMs: TARGET_READY_MS, rssPeakMiB: MiB(TARGET_RSS_BYTES) },
    met: { allReady: allReadyMs !== undefined && allReadyMs <= TARGET_READY_MS, rss: peakRss <= TARGET_RSS_BYTES },
    readyOverTime: samples.filter((_, i) => i % 4 === 0).map(({ atMs, ready }) => [atMs, ready]),
    problems,
  };
}

/** CPU seconds (user + system) each process used since the meter was made. */
function cpuMeter(processes: ReadonlyArray<{ name: string; pid: number }>): { read(): Record<string, number> } {
  const seconds = (pid: number) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      return NaN;
    }
  };
  const start = new Map(processes.map((p) => [p.name, seconds(p.pid)]));
  return {
    read: () => Object.fromEntries(processes.map((p) => [p.name, Math.round((seconds(p.pid) - (start.get(p.name) ?? 0)) * 10) / 10])),
  };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function table(runs: Run[], title: string): string {
  const mark = (ok: boolean) => (ok ? "met" : "**missed**");
  const rows = runs.map((r) => [
    `| applied (all creates answered) | ${(r.applyMs / 1000).toFixed(1)} s | |`,
    `| all Ready, from the first create | ${r.allReadyMs === null ? "never" : `${(r.allReadyMs / 1000).toFixed(1)} s`} | ≤ ${r.targets.allReadyMs / 1000} s: ${mark(r.met.allReady)} |`,
    `| keyplane's RSS: idle, peak, settled | ${r.rssIdleMiB}, ${r.rssPeakMiB}, ${r.rssSettledMiB} MiB | peak ≤ ${r.targets.rssPeakMiB} MiB: ${mark(r.met.rss)} |`,
    `| CPU seconds until all Ready | ${Object.entries(r.cpuSeconds).map(([name, s]) => `${name} ${s}`).join(", ")} | |`,
    `| load average (1 min) before, after | ${r.load.join(", ")} | |`,
    ...(r.problems.length > 0 ? [`| problems | ${r.problems.join("; ")} | |`] : []),
  ]);
  return [
    `## The operator at scale: ${COUNT} ApiKeys applied at once (${availableParallelism()} cores${NODE_FLAGS.length > 0 ? `, node ${NODE_FLAGS.join(" ")}` : ""}): ${title}`,
    "",
    "| figure | value | target |",
    "|---|---|---|",
    ...rows.flat(),
  ].join("\n");
}

await main();
