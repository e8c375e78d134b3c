// POST /admin/keys/import and GET /admin/keys/export (docs/api.md, "Import and export"): NDJSON in
// and out, streamed both ways. The routes use services/import/ through ImportNeeds, and http/'s
// route declaration, schemas and errors.
import { setImmediate as turn } from "node:timers/promises";
import type { Request, Response } from "express";
import { AppError, statusOf, type ErrorCode } from "../../domain/errors.ts";
import type { ImportLine } from "../../domain/import/import-line.ts";
import { exportKeys, exportNarrowing, recordExport, type ExportedLine } from "../../services/import/export-keys.ts";
import { KeyImport, lineError, type LineOutcome } from "../../services/import/import-keys.ts";
import type { ImportNeeds } from "../../services/import/needs.ts";
import { adminAuthor } from "../author.ts";
import { BODY_LIMIT, limitText } from "../body.ts";
import { parse, route, type Route } from "../route.ts";
import { EXPORT_EXAMPLE, IMPORT_ANSWER_EXAMPLE, IMPORT_EXAMPLE, importAnswerLine } from "./import-examples.ts";
import { creatable, exportQuery, importLineObject, importQuery } from "./import-schemas.ts";
import { ndjsonLines, type BodyLine } from "./ndjson-lines.ts";

const tag = "admin";
export const NDJSON = "application/x-ndjson";
/** Batches under way at once: the next one's first lines are read and sealed while the last lines of the one before are written. */
const MAX_BATCHES = 2;
/** At most this many lines wait while MAX_BATCHES batches are under way; the request is not read further until one is done. */
const MAX_WAITING = 1_000;
/** Answer lines gathered into one write. */
const LINES_PER_WRITE = 100;
/** Lines read (each parsed and checked, some 5-10 µs) between two turns of the event loop: a 64 KiB piece of the body is some 500 lines, and /auth must not wait for them all. */
const LINES_PER_TURN = 50;

/** A line read: its number, and its key, or why it is none. */
interface ReadLine {
  line: number;
  key?: ImportLine;
  outcome?: LineOutcome;
}

type Summary = Record<LineOutcome["status"], number>;

export function importRoutes(needs: ImportNeeds): Route[] {
  return [
    route({
      method: "post", path: "/admin/keys/import", operationId: "importKeys", tag, auth: "admin", query: importQuery,
      refusals: ["unsupported_media_type"],
      summary: "Import keys, tokens and all (NDJSON, one key a line)",
      ok: { status: 200, description: "One line per input line, in order, then a summary line (NDJSON, streamed)" },
      lines: { request: { schema: importLineObject, examples: IMPORT_EXAMPLE }, response: { schema: importAnswerLine, examples: IMPORT_ANSWER_EXAMPLE } },
      handle: (req, res, { query }) => importFile(needs, req, res, query.createDirectory),
    }),
    route({
      method: "get", path: "/admin/keys/export", operationId: "exportKeys", tag, auth: "admin", query: exportQuery, refusals: ["not_found"],
      summary: "Export every live key in the import's line form (NDJSON)",
      ok: { status: 200, description: "One key a line (NDJSON, streamed)" },
      lines: { response: { schema: importLineObject, examples: EXPORT_EXAMPLE } },
      handle: async (req, res, { query }) => {
        const narrowing = await exportNarrowing(needs, query.customer, query.domain);
        res.writeHead(200, { "Content-Type": `${NDJSON}; charset=utf-8` });
        let count = 0;
        await streamLines(res, exportKeys(needs, narrowing), (key) => (count++, exportedText(key)));
        // Recorded once the keys are out, as many as were written, also when the client stopped reading early.
        await recordExport(needs, count, adminAuthor(req));
        res.end();
      },
    }),
  ];
}

/** Whether a request's body says it is NDJSON. */
const isNdjson = (req: Request) => (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase() === NDJSON;

/**
 * Reads the file line by line while earlier lines are written: each batch is what arrived while the
 * ones before it were being written (so a slow client gets its answers as it goes, and a fast one large
 * batches), at most MAX_BATCHES of them under way and MAX_WAITING lines waiting. A body cut off leaves
 * the lines before the cut written; its last, cut line is refused like any line that is not JSON.
 */
async function importFile(needs: ImportNeeds, req: Request, res: Response, createDirectory: boolean): Promise<void> {
  if (!isNdjson(req)) throw new AppError("unsupported_media_type", `The request body must be NDJSON (Content-Type: ${NDJSON}).`);
  const importer = new KeyImport(needs, { by: { actor: { type: "import" }, requestId: req.id }, createDirectory, creatable });
  const summary: Summary = { created: 0, updated: 0, unchanged: 0, conflict: 0, invalid: 0 };
  res.writeHead(200, { "Content-Type": `${NDJSON}; charset=utf-8` });
  res.flushHeaders();
  let waiting: ReadLine[] = [];
  /** The batches under way, oldest first, each settled once its answers are written (never rejected: see `failure`). */
  const underWay: Promise<void>[] = [];
  let failure: unknown;
  const next = () => {
    const batch = waiting;
    waiting = [];
    const answered = answer(importer, batch, res, summary, underWay.at(-1)).catch((error: unknown) => void (failure ??= error));
    underWay.push(answered.then(() => void underWay.shift()));
  };
  try {
    let number = 0;
    for await (const body of ndjsonLines(req, BODY_LIMIT)) {
      waiting.push(readLine(++number, body));
      if (number % LINES_PER_TURN === 0) await turn();
      if (waiting.length >= MAX_WAITING && underWay.length === MAX_BATCHES) await underWay[0];
      if (failure) throw failure;
      if (underWay.length < MAX_BATCHES) next();
    }
  } catch (error) {
    // The client went: what it sent whole is still written; nobody is left to answer.
    if (!req.destroyed) failure ??= error;
  }
  while (!failure && (waiting.length > 0 || underWay.length > 0)) {
    if (waiting.length > 0 && underWay.length < MAX_BATCHES) next();
    else await underWay[0];
  }
  await Promise.all(underWay);
  if (failure) return fail(needs, res, failure);
  await importer.finish();
  res.end(`${JSON.stringify({ summary })}\n`);
}

function readLine(line: number, body: BodyLine): ReadLine {
  if (!("text" in body)) return { line, outcome: invalid("payload_too_large", `A line is at most ${limitText(BODY_LIMIT)}.`) };
  let value: unknown;
  try {
    value = JSON.parse(body.text);
  } catch {
    return { line, outcome: invalid("bad_request", "The line is not JSON (or was cut off).") };
  }
  try {
    return { line, key: parse(importLineObject, value, "line") };
  } catch (error) {
    if (error instanceof AppError) return { line, outcome: invalid(error.code, error.message) };
    throw error;
  }
}

const invalid = (code: ErrorCode, message: string): LineOutcome => ({ status: "invalid", error: lineError(code, message) });

/** Imports a batch's keys and writes the answer of each of its lines, in order, once the batch `before` has. */
async function answer(importer: KeyImport, batch: ReadLine[], res: Response, summary: Summary, before: Promise<void> | undefined): Promise<void> {
  const keyed = batch.filter((r) => r.key !== undefined);
  const outcomes = await importer.importBatch(keyed.map((r) => r.key!));
  await before;
  keyed.forEach((r, i) => (r.outcome = outcomes[i]));
  await streamLines(res, batch, ({ line, outcome }) => {
    summary[outcome!.status]++;
    return JSON.stringify({ line, ...outcome });
  });
}

/**
 * Writes one JSON text a line, LINES_PER_WRITE lines a write, a turn of the event loop between two
 * writes (what other requests answer meanwhile must not wait for a whole page), and waiting whenever
 * the client reads slower than it is written.
 */
async function streamLines<T>(res: Response, items: Iterable<T> | AsyncIterable<T>, text: (item: T) => string): Promise<void> {
  let chunk = "";
  let lines = 0;
  for await (const item of items) {
    chunk += `${text(item)}\n`;
    if (++lines % LINES_PER_WRITE !== 0) continue;
    if (!(await send(res, chunk))) return;
    chunk = "";
    await turn();
  }
  if (chunk) await send(res, chunk);
}

/** Writes a chunk; false once the client is gone. */
async function send(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(chunk)) await new Promise((resolve) => {
    res.once("drain", resolve);
    res.once("close", resolve);
  });
  return !res.destroyed;
}

/** An exported key as its line: fields left out where the key has none. */
function exportedText(k: ExportedLine): string {
  return JSON.stringify({
    customer: k.customer, domain: k.domain, application: k.application, subscriber: k.subscriber, user: k.user, name: k.name, keyId: k.keyId,
    type: k.type, active: k.active, createdAt: k.createdAt, expiresAt: k.expiresAt ?? undefined, policy: k.policy ?? undefined,
  });
}

/** A failure once the answer has begun: its last line says so, with the error body every error has. */
function fail(needs: ImportNeeds, res: Response, error: unknown): void {
  const code: ErrorCode = error instanceof AppError ? error.code : "internal";
  needs.log.error({ err: error }, "import failed");
  const message = error instanceof AppError ? error.message : "The import stopped: the lines answered so far stand.";
  res.end(`${JSON.stringify({ error: { status: statusOf(code), error: code, message } })}\n`);
}
