// The import's NDJSON in and out (docs/migration.md, "How it is written"): a body's lines in, one
// answer line each out, in order, then the summary. Free of the HTTP request and response, so that it
// runs the same on the thread that serves requests and on the import's own (src/import-worker.ts).
import { setImmediate as turn } from "node:timers/promises";
import { AppError, type ErrorCode } from "../../domain/errors.ts";
import type { ImportLine } from "../../domain/import/import-line.ts";
import { KeyImport, lineError, type LineOutcome } from "../../services/import/import-keys.ts";
import type { ImportNeeds } from "../../services/import/needs.ts";
import type { Author } from "../../domain/keys/key-event.ts";
import { BODY_LIMIT, limitText } from "../body.ts";
import { errorBody } from "../errors.ts";
import { parse } from "../route.ts";
import { creatable, importLineObject } from "./import-schemas.ts";
import { ndjsonLines, type BodyLine } from "./ndjson-lines.ts";

/**
 * Batches under way at once: while one is written, the next is read and sealed (docs/migration.md,
 * "How it is written"). A third held more lines for no more speed once a batch's insert was made ready
 * before its turn.
 */
const MAX_BATCHES = 2;
/** At most this many lines wait while MAX_BATCHES batches are under way; the body is not read further until one is done. */
const MAX_WAITING = 1_000;
/** Answer lines gathered into one write. */
const LINES_PER_WRITE = 100;
/** Lines read (each parsed and checked, some 5-10 µs) between two turns of the event loop: a 64 KiB piece of the body is some 500 lines, and /auth must not wait for them all. */
const LINES_PER_TURN = 50;

/** Where answer lines go, a chunk at a time. */
export interface AnswerSink {
  /** Writes a chunk, and waits while the reader is behind; false once nobody reads. */
  write(chunk: string): Promise<boolean>;
  /** Whether the client went away: then nothing more is answered, but what it sent whole is written. */
  readonly gone: boolean;
}

/** What one import is asked: who its events name, and whether it creates the entities lines name. */
export interface ImportRequest {
  by: Author;
  createDirectory: boolean;
}

/** A line read: its number, and its key, or why it is none. */
interface ReadLine {
  line: number;
  key?: ImportLine;
  outcome?: LineOutcome;
}

type Summary = Record<LineOutcome["status"], number>;

/**
 * Reads the file line by line while earlier lines are written: each batch is what arrived while the
 * ones before it were being written (so a slow client gets its answers as it goes, and a fast one large
 * batches), at most MAX_BATCHES of them under way and MAX_WAITING lines waiting. A body cut off leaves
 * the lines before the cut written; its last, cut line is refused like any line that is not JSON. The
 * answer's last line is the summary, or the error that stopped the import.
 */
export async function importStream(needs: ImportNeeds, request: ImportRequest, body: AsyncIterable<Buffer>, sink: AnswerSink): Promise<void> {
  const importer = new KeyImport(needs, { ...request, creatable });
  const summary: Summary = { created: 0, updated: 0, unchanged: 0, conflict: 0, invalid: 0 };
  let waiting: ReadLine[] = [];
  /** The batches under way, oldest first, each settled once its answers are written (never rejected: see `failure`). */
  const underWay: Promise<void>[] = [];
  let failure: unknown;
  // A batch done, the lines that waited for it go at once: not when the next line arrives, which a
  // client that reads its answers before it sends more would never send.
  const next = () => {
    const batch = waiting;
    waiting = [];
    const answered = answer(importer, batch, sink, summary, underWay.at(-1)).catch((error: unknown) => void (failure ??= error));
    underWay.push(answered.then(() => {
      underWay.shift();
      if (!failure && waiting.length > 0 && underWay.length < MAX_BATCHES) next();
    }));
  };
  try {
    let number = 0;
    for await (const text of ndjsonLines(body, BODY_LIMIT)) {
      waiting.push(readLine(++number, text));
      if (number % LINES_PER_TURN === 0) await turn();
      if (waiting.length >= MAX_WAITING && underWay.length === MAX_BATCHES) await underWay[0];
      if (failure) throw failure;
      if (underWay.length < MAX_BATCHES) next();
    }
  } catch (error) {
    // The client went: what it sent whole is still written; nobody is left to answer.
    if (!sink.gone) failure ??= error;
  }
  while (!failure && (waiting.length > 0 || underWay.length > 0)) {
    if (waiting.length > 0 && underWay.length < MAX_BATCHES) next();
    else await underWay[0];
  }
  await Promise.all(underWay);
  if (!failure) await importer.finish().catch((error: unknown) => void (failure = error));
  if (failure) return fail(needs, sink, failure);
  await sink.write(`${JSON.stringify({ summary })}\n`);
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
async function answer(importer: KeyImport, batch: ReadLine[], sink: AnswerSink, summary: Summary, before: Promise<void> | undefined): Promise<void> {
  const keyed = batch.filter((r) => r.key !== undefined);
  const outcomes = await importer.importBatch(keyed.map((r) => r.key!));
  await before;
  keyed.forEach((r, i) => (r.outcome = outcomes[i]));
  await streamLines(sink, batch, ({ line, outcome }) => {
    summary[outcome!.status]++;
    return JSON.stringify({ line, ...outcome });
  });
}

/**
 * Writes one JSON text a line, LINES_PER_WRITE lines a write, a turn of the event loop between two
 * writes (what other requests answer meanwhile must not wait for a whole page), and waiting whenever
 * the reader is behind.
 */
export async function streamLines<T>(sink: AnswerSink, items: Iterable<T> | AsyncIterable<T>, text: (item: T) => string): Promise<void> {
  let chunk = "";
  let lines = 0;
  for await (const item of items) {
    chunk += `${text(item)}\n`;
    if (++lines % LINES_PER_WRITE !== 0) continue;
    if (!(await sink.write(chunk))) return;
    chunk = "";
    await turn();
  }
  if (chunk) await sink.write(chunk);
}

/** A failure once the answer has begun: its last line says so, with the error body every error has. */
async function fail(needs: ImportNeeds, sink: AnswerSink, error: unknown): Promise<void> {
  needs.log.error({ err: error }, "import failed");
  await sink.write(failureLine(error));
}

/** The answer's last line when the import stopped: the error's own body, or an internal error's. */
export function failureLine(error: unknown): string {
  const body = error instanceof AppError ? errorBody(error.code, error.message) : errorBody("internal", "The import stopped: the lines answered so far stand.");
  return `{"error":${body}}\n`;
}
