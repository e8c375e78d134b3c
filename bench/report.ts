import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, platform, release, totalmem, arch } from "node:os";
import { join } from "node:path";
import { REPO } from "./processes.ts";

// What the benchmark reports: every figure, its target (for a 2-core machine), whether it was
// met, and the machine and versions it was measured on.

export type Comparison = ">=" | "<=" | "<" | "=";

export interface FigureSpec {
  key: string;
  label: string;
  unit: string;
  target?: { op: Comparison; value: number };
}

export const FIGURES = [
  { key: "selfVsBare", label: "GET /keys/self throughput ÷ bare node:http (headline)", unit: "×", target: { op: ">=", value: 0.7 } },
  { key: "selfRequestsPerSecond", label: "GET /keys/self throughput, 64 connections", unit: "req/s" },
  { key: "bareRequestsPerSecond", label: "bare node:http throughput, same body, same run", unit: "req/s" },
  { key: "selfP50Ms", label: "GET /keys/self p50 latency", unit: "ms" },
  { key: "selfP99Ms", label: "GET /keys/self p99 latency", unit: "ms", target: { op: "<", value: 5 } },
  { key: "mixedRequestsPerSecond", label: "50% unknown tokens: throughput", unit: "req/s" },
  { key: "mixedVsValid", label: "50% unknown tokens: throughput ÷ all-valid runs", unit: "×", target: { op: ">=", value: 0.8 } },
  { key: "mixedValidP99Ms", label: "50% unknown tokens: p99 latency of the valid-token requests", unit: "ms" },
  { key: "queriesPerUnknownToken", label: "50% unknown tokens: DB queries per unknown token, after warm-up", unit: "", target: { op: "<=", value: 0.01 } },
  { key: "provisioningKeysPerSecond", label: "provisioning: POST /keys of new keys", unit: "keys/s", target: { op: ">=", value: 2000 } },
  { key: "listSeconds", label: "GET of the whole key list: time to last byte", unit: "s", target: { op: "<=", value: 1.5 } },
  { key: "listRssGrowthMiB", label: "GET of the whole key list: server's peak RSS growth", unit: "MiB", target: { op: "<", value: 64 } },
  { key: "revocationStaleSameProcess", label: "revocation: stale answers on the same process", unit: "", target: { op: "=", value: 0 } },
  { key: "revocationP50Ms", label: "revocation on another process: p50 delay", unit: "ms" },
  { key: "revocationP99Ms", label: "revocation on another process: p99 delay", unit: "ms", target: { op: "<", value: 1000 } },
  { key: "revocationMaxMs", label: "revocation on another process: max delay", unit: "ms" },
  { key: "authVsBare", label: "GET /auth (customer path) throughput ÷ bare node:http", unit: "×", target: { op: ">=", value: 0.7 } },
  { key: "authP50Ms", label: "GET /auth p50 latency", unit: "ms" },
  { key: "authP99Ms", label: "GET /auth p99 latency", unit: "ms", target: { op: "<", value: 5 } },
  { key: "authQueriesPerRequest", label: "GET /auth: DB transactions per request, after warm-up", unit: "", target: { op: "<=", value: 0 } },
  { key: "verifyVsBare", label: "POST /verify (customer path) throughput ÷ bare node:http", unit: "×", target: { op: ">=", value: 0.7 } },
  { key: "verifyP50Ms", label: "POST /verify p50 latency", unit: "ms" },
  { key: "verifyP99Ms", label: "POST /verify p99 latency", unit: "ms", target: { op: "<", value: 5 } },
  { key: "verifyQueriesPerRequest", label: "POST /verify: DB transactions per request, after warm-up", unit: "", target: { op: "<=", value: 0 } },
  { key: "metricsSelfOnVsOff", label: "GET /keys/self with metrics kept and scraped ÷ without", unit: "×", target: { op: ">=", value: 0.95 } },
  { key: "metricsAuthOnVsOff", label: "GET /auth (customer path) with metrics kept and scraped ÷ without", unit: "×", target: { op: ">=", value: 0.95 } },
  { key: "policyAuthVsPlain", label: "GET /auth for a key with a rate limit and credits ÷ for a key without a policy", unit: "×", target: { op: ">=", value: 0.6 } },
  { key: "policyAuthP99Ms", label: "GET /auth for a key with a rate limit and credits: p99 latency", unit: "ms" },
  { key: "policyTransactionsPerRequest", label: "GET /auth for a key with a rate limit and credits: DB transactions per admitted request", unit: "", target: { op: "<=", value: 0.02 } },
  { key: "lineageAuthVsPlain", label: "GET /auth for a key three generations deep, both ancestors with policies ÷ for a key without a policy", unit: "×", target: { op: ">=", value: 0.8 } },
  { key: "analyticsAuthOnVsOff", label: "GET /auth counting usage analytics ÷ with KEYPLANE_ANALYTICS=off", unit: "×", target: { op: ">=", value: 0.97 } },
  { key: "analyticsStatementsPerWrite", label: "usage analytics, 100,000 keys used once a minute: statements per process per 10 s", unit: "", target: { op: "<=", value: 1 } },
  { key: "analyticsWriteMs", label: "usage analytics: one write of 100,000 keys' 10 s (about 16,700 key-minutes)", unit: "ms" },
  { key: "analyticsBytesPerKeyHour", label: "usage analytics: bytes on disk per key-hour of a key used every minute (minutes, hours, days)", unit: "B" },
  { key: "webhookDeliveriesPerSecond", label: "webhooks: 1,000 queued messages delivered to a local receiver", unit: "msg/s", target: { op: ">=", value: 500 } },
  { key: "webhookProvisioningVsNone", label: "provisioning with one webhook subscribed ÷ with none", unit: "×", target: { op: ">=", value: 0.8 } },
  { key: "idleTransactionsPerSecond", label: "one idle keyplane (listener and webhook sender on, no request): DB transactions a second", unit: "tx/s", target: { op: "<=", value: 1 } },
  { key: "nginxAuthVsPlain", label: "nginx with auth_request to keyplane ÷ nginx without", unit: "×", target: { op: ">=", value: 0.5 } },
  { key: "importSeconds", label: "import: 1,000,000 keys in one POST /admin/keys/import, first byte sent to last byte read", unit: "s", target: { op: "<=", value: 60 } },
  { key: "importKeysPerSecond", label: "import: keys a second", unit: "keys/s" },
  { key: "importRssGrowthMiB", label: "import: server's peak RSS growth", unit: "MiB", target: { op: "<=", value: 64 } },
  { key: "exportSeconds", label: "export: 1,000,000 keys in one GET /admin/keys/export, to last byte", unit: "s", target: { op: "<=", value: 20 } },
  { key: "exportRssGrowthMiB", label: "export: server's peak RSS growth", unit: "MiB", target: { op: "<=", value: 64 } },
  { key: "importAuthP99VsIdle", label: "GET /auth p99 for another key during the import ÷ idle, same run", unit: "×", target: { op: "<=", value: 2 } },
  { key: "importElsewhereAuthP99VsIdle", label: "GET /auth p99 while an import runs on another keyplane process of the same machine ÷ idle (what sharing the cores costs)", unit: "×" },
] as const satisfies readonly FigureSpec[];

export type FigureKey = (typeof FIGURES)[number]["key"];

export interface Figure {
  label: string;
  value: number;
  unit: string;
  target: string | null;
  met: boolean | null;
  /** What the value was computed from, for a person. */
  detail?: string;
}

export function meets(value: number, target: { op: Comparison; value: number }): boolean {
  switch (target.op) {
    case ">=": return value >= target.value;
    case "<=": return value <= target.value;
    case "<": return value < target.value;
    case "=": return value === target.value;
  }
}

export function figures(values: Record<FigureKey, number>, details: Partial<Record<FigureKey, string>>): Record<FigureKey, Figure> {
  return Object.fromEntries(
    FIGURES.map((spec: FigureSpec) => {
      const value = values[spec.key as FigureKey];
      const figure: Figure = {
        label: spec.label,
        value,
        unit: spec.unit,
        target: spec.target ? `${spec.target.op} ${spec.target.value}` : null,
        met: spec.target ? meets(value, spec.target) : null,
      };
      const detail = details[spec.key as FigureKey];
      if (detail) figure.detail = detail;
      return [spec.key, figure];
    }),
  ) as Record<FigureKey, Figure>;
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs === 0 || Number.isInteger(value) ? 0 : abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : abs >= 0.01 ? 3 : 5;
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function markdownTable(all: Record<string, Figure>): string {
  const rows = Object.values(all).map((f) => {
    const ran = Number.isFinite(f.value);
    const measured = ran ? `${formatNumber(f.value)}${f.unit ? " " + f.unit : ""}${f.detail ? ` (${f.detail})` : ""}` : "not run";
    const target = f.target ? `${f.target}${f.unit && f.unit !== "×" ? " " + f.unit : ""}` : "—";
    const met = f.met === null || !ran ? "" : f.met ? "yes" : "**no**";
    return `| ${f.label} | ${measured} | ${target} | ${met} |`;
  });
  return ["| figure | measured | target | met |", "|---|---|---|---|", ...rows].join("\n");
}

function git(...args: string[]): string | null {
  try {
    return execFileSync("git", args, { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

function packageVersion(path: string): string {
  try {
    return (JSON.parse(readFileSync(path, "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function machine() {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model ?? "unknown",
    cpuCount: cpu.length,
    totalMemoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    freeMemoryGiB: Number((freemem() / 2 ** 30).toFixed(1)),
    platform: `${platform()} ${release()} ${arch()}`,
    loadAverage: loadavg().map((n) => Number(n.toFixed(2))),
  };
}

export function versions(postgres: string) {
  const commit = git("rev-parse", "--short", "HEAD");
  const dirty = commit === null ? null : (git("status", "--porcelain", "--", "src", "migrations", "package.json") ?? "") !== "";
  return {
    node: process.version,
    postgres,
    keyplane: packageVersion(join(REPO, "package.json")),
    commit,
    /** Whether src/, migrations/ or package.json differed from that commit. */
    uncommittedChanges: dirty,
    autocannon: packageVersion(join(REPO, "node_modules/autocannon/package.json")),
  };
}
