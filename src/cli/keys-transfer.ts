import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { CliError } from "./keys-api.ts";

// `keyplane keys import FILE` and `keyplane keys export [--customer C [--domain D]] > FILE`, with the
// admin token as KEYPLANE_TOKEN (docs/migration.md). Both stream: the file is sent as it is read, and
// the answers are read as they come. On a terminal, standard error shows how far it got.

export interface TransferEnvironment {
  url: string;
  token: string | undefined;
}

/** Where the progress line goes: standard error, rewritten in place, when it is a terminal; nowhere otherwise. */
export type Progress = (line: string | undefined) => void;

export const terminalProgress: Progress = (line) => {
  if (!process.stderr.isTTY) return;
  process.stderr.write(line === undefined ? "\n" : `\r\x1b[K${line}`);
};

interface Summary {
  created: number;
  updated: number;
  unchanged: number;
  conflict: number;
  invalid: number;
}

/** How far a transfer got: keys done, keys a second, and the time left when the whole is known. */
export function progressLine(done: number, seconds: number, fraction: number | undefined): string {
  const rate = seconds > 0 ? done / seconds : 0;
  const left = fraction && fraction > 0 && fraction < 1 && seconds > 0 ? ` · ${formatSeconds((seconds / fraction) * (1 - fraction))} left` : "";
  return `${done.toLocaleString("en")} keys · ${Math.round(rate).toLocaleString("en")} keys/s${left}`;
}

const formatSeconds = (s: number) => (s >= 60 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, "0")}s` : `${Math.ceil(s)}s`);

/** Sends FILE to POST /admin/keys/import; prints each refused line and the summary. */
export async function importCommand(
  env: TransferEnvironment, file: string, createDirectory: boolean, json: boolean, out: (text: string) => void,
  progress: Progress = terminalProgress, fetchImpl: typeof fetch = fetch,
): Promise<void> {
  const size = await stat(file).then((s) => s.size, () => {
    throw new CliError(`cannot read ${file}`);
  });
  let sent = 0;
  const body = createReadStream(file);
  body.on("data", (chunk) => (sent += chunk.length));
  const res = await call(env, fetchImpl, `/admin/keys/import${createDirectory ? "?createDirectory=true" : ""}`, {
    method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body: Readable.toWeb(body) as ReadableStream, duplex: "half",
  });
  const started = performance.now();
  let done = 0;
  let summary: Summary | undefined;
  for await (const line of lines(res)) {
    const answer = JSON.parse(line) as { line?: number; status?: string; error?: { message: string }; summary?: Summary };
    if (answer.summary) summary = answer.summary;
    else if (answer.line === undefined) throw new CliError(`the import stopped: ${answer.error?.message ?? line}`);
    else {
      done++;
      if (answer.error && !json) out(`line ${answer.line}: ${answer.status}: ${answer.error.message}\n`);
      if (done % 1000 === 0) progress(progressLine(done, (performance.now() - started) / 1000, size ? sent / size : undefined));
    }
  }
  progress(undefined);
  if (!summary) throw new CliError("the import's answer ended before its summary");
  out(json ? JSON.stringify(summary, null, 2) + "\n" : `${Object.entries(summary).map(([k, v]) => `${k} ${v}`).join(", ")}\n`);
}

/** Writes GET /admin/keys/export to `out`, line by line. */
export async function exportCommand(
  env: TransferEnvironment, customer: string | undefined, domain: string | undefined, out: (text: string) => void,
  progress: Progress = terminalProgress, fetchImpl: typeof fetch = fetch,
): Promise<void> {
  const query = new URLSearchParams({ ...(customer !== undefined && { customer }), ...(domain !== undefined && { domain }) }).toString();
  const res = await call(env, fetchImpl, `/admin/keys/export${query ? `?${query}` : ""}`, { method: "GET" });
  const started = performance.now();
  let done = 0;
  for await (const line of lines(res)) {
    out(`${line}\n`);
    if (++done % 1000 === 0) progress(progressLine(done, (performance.now() - started) / 1000, undefined));
  }
  progress(undefined);
}

async function call(env: TransferEnvironment, fetchImpl: typeof fetch, path: string, init: RequestInit & { duplex?: "half" }): Promise<Response> {
  if (!env.token) throw new CliError("KEYPLANE_TOKEN is not set: export the admin token to import or export keys");
  const base = env.url.replace(/\/+$/, "");
  let res: Response;
  try {
    res = await fetchImpl(base + path, { ...init, headers: { ...init.headers, Authorization: `Bearer ${env.token}` } });
  } catch (error) {
    const { cause } = error as { cause?: { code?: string; message?: string } };
    throw new CliError(`cannot reach ${base}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
  }
  if (!res.ok) {
    const problem = (await res.json().catch(() => undefined)) as { error?: string; message?: string } | undefined;
    throw new CliError(problem?.message ? `${problem.message} (${res.status} ${problem.error})` : `${init.method} ${path}: HTTP ${res.status}`);
  }
  return res;
}

/** An NDJSON answer's lines as they arrive. */
async function* lines(res: Response): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const text = rest + decoder.decode(chunk, { stream: true });
    const parts = text.split("\n");
    rest = parts.pop()!;
    for (const part of parts) if (part !== "") yield part;
  }
  if (rest !== "") yield rest;
}
