import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type autocannon from "autocannon";
import { load, summarize, type LoadResult } from "./load.ts";
import { memoryOf, resetPeak, type Server } from "./processes.ts";

// The import phase (bench/README.md, `--only import`): KEYS keys imported through POST
// /admin/keys/import in one request, the directory created on the way (one customer, DOMAINS
// domains; the file written first, then sent by curl), then exported through GET /admin/keys/export
// narrowed to that customer; each timed from the first byte sent to the last byte read, with the
// server's peak RSS over its RSS before. Meanwhile GET /auth for another customer's key runs at a
// steady pace, and its p99 is set against the same load's p99 while idle, in the same run
// (docs/migration.md, "Cost"). Then the same /auth load runs while an import of PEER_KEYS keys
// goes to another keyplane process on the same database: what sharing the cores with an import
// costs /auth, with none of the import's work on the process that answers it.

export interface ImportFigures {
  importSeconds: number;
  importKeysPerSecond: number;
  importRssGrowthMiB: number;
  exportSeconds: number;
  exportRssGrowthMiB: number;
  importAuthP99VsIdle: number;
  importElsewhereAuthP99VsIdle: number;
}

export interface ImportTools {
  say(text: string): void;
  problem(text: string): void;
  keys: number;
  /** Seconds of the /auth load while idle. */
  seconds: number;
}

const DOMAINS = 100;
/** The customer the import creates, and the export narrows to. */
const CUSTOMER = "bench-import";
/** The customer of the import sent to the other process, and its keys: as many as the first import's, but some 15 s of /auth at most, and a few one-second slices at least. */
const PEER_CUSTOMER = "bench-import-peer";
const PEER_KEYS = { most: 300_000, least: 50_000 };
/** /auth's load, idle and during the import: a steady pace, as a gateway's would be, not a flood that takes every core. */
const AUTH_CONNECTIONS = 4;
const AUTH_RATE = 1_000;
const MiB = 1024 * 1024;
const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/**
 * Writes the file's lines to `path`, in pieces: never the whole file in this process's memory. Made
 * before the import, not while it runs: autocannon measures /auth's latency in this process, and
 * making the lines meanwhile would delay its reading of answers, as if the server were slower.
 */
async function writeImportFile(path: string, keys: number, customer: string): Promise<void> {
  const out = createWriteStream(path);
  const lines: string[] = [];
  for (let i = 0; i < keys; i++) {
    const keyId = "XI" + randomBytes(16).toString("hex").toUpperCase();
    lines.push(JSON.stringify({ customer, domain: `d${i % DOMAINS}.${customer}.example`, name: `key-${i}`, keyId, createdAt: "2024-01-01T00:00:00Z" }));
    if (lines.length === 1000 || i === keys - 1) {
      if (!out.write(lines.join("\n") + "\n")) await once(out, "drain");
      lines.length = 0;
    }
  }
  out.end();
  await once(out, "finish");
}

/**
 * POSTs the file with curl, a process of its own, its answer to `answers`: sending a file and reading
 * a million answer lines stays out of this process, where autocannon measures /auth (as above).
 */
async function curlImport(url: string, token: string, file: string, answers: string): Promise<number> {
  const child = spawn("curl", ["-sS", "-o", answers, "-w", "%{http_code}", "-H", `Authorization: Bearer ${token}`, "-H", "Content-Type: application/x-ndjson",
    "-T", file, "-X", "POST", `${url}/admin/keys/import?createDirectory=true`], { stdio: ["ignore", "pipe", "inherit"] });
  let status = "";
  child.stdout.on("data", (c: Buffer) => (status += c.toString()));
  await once(child, "exit");
  return Number(status);
}

/** Sends a request and reads its NDJSON answer line by line, calling `onLine`; resolves with the status. */
function ndjsonRequest(url: string, method: string, path: string, token: string, onLine: (line: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let rest = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        for (const part of parts) onLine(part);
      });
      res.on("end", () => {
        if (rest) onLine(rest);
        resolve(res.statusCode ?? 0);
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

export async function importPhase(t: ImportTools, a: Server, adminToken: string, authKey: { customer: string; token: string }, startPeer: () => Promise<Server>) {
  const auth: autocannon.Request[] = [
    { method: "GET", path: "/auth", headers: { authorization: `Bearer ${authKey.token}`, "x-original-method": "GET", "x-original-uri": `/customers/${authKey.customer}/calls` } },
  ];
  t.say(`import: GET /auth while idle, ${t.seconds} s, ${AUTH_CONNECTIONS} connections, ${AUTH_RATE} requests a second`);
  const idle = await load({ url: a.url, connections: AUTH_CONNECTIONS, overallRate: AUTH_RATE, duration: t.seconds, requests: auth });

  const dir = await mkdtemp(join(tmpdir(), "keyplane-bench-import-"));
  try {
    const file = join(dir, "keys.ndjson");
    t.say(`import: writing ${t.keys.toLocaleString("en")} keys to a file`);
    await writeImportFile(file, t.keys, CUSTOMER);
    const result = await measured(t, a, adminToken, auth, idle, file, join(dir, "answers.ndjson"));
    const elsewhere = await importedElsewhere(t, a, startPeer, adminToken, auth, idle, dir);
    return {
      figures: { ...result.figures, importElsewhereAuthP99VsIdle: elsewhere.ratio },
      details: { ...result.details, importElsewhereAuthP99VsIdle: elsewhere.detail },
      run: { ...result.run, elsewhereAuth: elsewhere.latency },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** GET /auth on `a` in slices of a second until `running` settles: only the slices wholly before it count. */
async function authWhile(a: Server, auth: autocannon.Request[], running: Promise<unknown>): Promise<LoadResult[]> {
  let done = false;
  running.then(() => (done = true), () => (done = true));
  const during: LoadResult[] = [];
  while (!done) {
    const slice = await load({ url: a.url, connections: AUTH_CONNECTIONS, overallRate: AUTH_RATE, duration: 1, requests: auth });
    if (!done) during.push(slice);
  }
  return during;
}

/** The answer file's lines by status, and its summary (or the error line that ended it). */
async function readAnswers(answers: string): Promise<{ statuses: Record<string, number>; summary: unknown }> {
  const statuses: Record<string, number> = {};
  let summary: unknown;
  for await (const line of createInterface({ input: createReadStream(answers) })) {
    const answer = JSON.parse(line) as { status?: string; summary?: unknown };
    if (answer.status) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    else summary = answer.summary ?? answer;
  }
  return { statuses, summary };
}

const allOf = (slices: LoadResult[]) => summarize(Float64Array.from(slices.flatMap((slice) => [...slice.latencies])));

async function measured(t: ImportTools, a: Server, adminToken: string, auth: autocannon.Request[], idle: LoadResult, file: string, answers: string) {
  const before = memoryOf(a.pid);
  resetPeak(a.pid);
  t.say(`import: ${t.keys.toLocaleString("en")} keys in one POST /admin/keys/import?createDirectory=true (curl), GET /auth alongside`);
  const started = performance.now();
  const sent = curlImport(a.url, adminToken, file, answers);
  const during = await authWhile(a, auth, sent);
  const status = await sent;
  const importSeconds = (performance.now() - started) / 1000;
  const importPeak = memoryOf(a.pid);
  const { statuses, summary } = await readAnswers(answers);
  if (status !== 200 || statuses.created !== t.keys) t.problem(`import: HTTP ${status}, ${JSON.stringify(statuses)}, ${JSON.stringify(summary)}`);
  const beforeExport = memoryOf(a.pid);
  resetPeak(a.pid);
  // The imported customer's keys alone: in a whole run, the other phases' keys are on the same database.
  t.say(`import: GET /admin/keys/export?customer=${CUSTOMER} of every imported key`);
  let exported = 0;
  const exportStarted = performance.now();
  const exportStatus = await ndjsonRequest(a.url, "GET", `/admin/keys/export?customer=${CUSTOMER}`, adminToken, () => exported++);
  const exportSeconds = (performance.now() - exportStarted) / 1000;
  const exportPeak = memoryOf(a.pid);
  if (exportStatus !== 200 || exported !== t.keys) t.problem(`export: HTTP ${exportStatus}, ${exported} lines for ${t.keys} keys`);

  // The contract's reading: the p99 of every /auth answered while the import ran. The worst one-second
  // slice's p99 is in the details too: where the import made /auth wait longest.
  const duringAll = allOf(during);
  const duringP99 = duringAll.p99;
  const worstSliceP99 = during.length ? Math.max(...during.map((slice) => slice.latency.p99)) : NaN;
  const requestsDuring = duringAll.count;
  const figures: Omit<ImportFigures, "importElsewhereAuthP99VsIdle"> = {
    importSeconds: round(importSeconds, 1),
    importKeysPerSecond: Math.round(t.keys / importSeconds),
    importRssGrowthMiB: round(((importPeak?.hwm ?? NaN) - (before?.rss ?? NaN)) / MiB, 1),
    exportSeconds: round(exportSeconds, 1),
    exportRssGrowthMiB: round(((exportPeak?.hwm ?? NaN) - (beforeExport?.rss ?? NaN)) / MiB, 1),
    importAuthP99VsIdle: round(duringP99 / idle.latency.p99),
  };
  return {
    figures,
    details: {
      importSeconds: `${t.keys.toLocaleString("en")} keys, ${figures.importKeysPerSecond.toLocaleString("en")} keys/s, ${DOMAINS} domains created`,
      importAuthP99VsIdle: `p99 ${round(duringP99, 3)} ms during (${requestsDuring} requests in ${during.length} one-second slices; the worst slice's p99 ${round(worstSliceP99, 3)} ms, ${round(worstSliceP99 / idle.latency.p99)}x) vs ${round(idle.latency.p99, 3)} ms idle, ${AUTH_CONNECTIONS} connections, ${AUTH_RATE} requests a second`,
    },
    run: { statuses, summary, idleAuth: idle.latency, duringAuth: duringAll, worstSliceAuthP99Ms: worstSliceP99, memory: { before, importPeak, beforeExport, exportPeak } },
  };
}

/**
 * /auth on `a` while an import of PEER_KEYS keys goes to another keyplane process on the same
 * database, against the same idle p99: the cost of sharing the machine's cores with an import (its
 * PostgreSQL backend and the other process's work), without any of the import's work on the event
 * loop and heap that answer /auth.
 */
async function importedElsewhere(t: ImportTools, a: Server, startPeer: () => Promise<Server>, adminToken: string, auth: autocannon.Request[], idle: LoadResult, dir: string) {
  const keys = Math.max(PEER_KEYS.least, Math.min(t.keys, PEER_KEYS.most));
  const file = join(dir, "peer.ndjson");
  const answers = join(dir, "peer-answers.ndjson");
  await writeImportFile(file, keys, PEER_CUSTOMER);
  const b = await startPeer();
  try {
    t.say(`import: ${keys.toLocaleString("en")} keys to another keyplane process on the same database, GET /auth on the first alongside`);
    const sent = curlImport(b.url, adminToken, file, answers);
    const during = await authWhile(a, auth, sent);
    const status = await sent;
    const { statuses, summary } = await readAnswers(answers);
    if (status !== 200 || statuses.created !== keys) t.problem(`import elsewhere: HTTP ${status}, ${JSON.stringify(statuses)}, ${JSON.stringify(summary)}`);
    const latency = allOf(during);
    const ratio = round(latency.p99 / idle.latency.p99);
    const detail = `p99 ${round(latency.p99, 3)} ms while ${keys.toLocaleString("en")} keys went to another keyplane process (${latency.count} requests) vs ${round(idle.latency.p99, 3)} ms idle`;
    return { ratio, detail, latency };
  } finally {
    await b.stop();
  }
}
