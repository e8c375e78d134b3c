// POST /admin/keys/import and GET /admin/keys/export (docs/api.md, "Import and export"): NDJSON in
// and out, streamed both ways. The routes use services/import/ through ImportNeeds, and http/'s
// route declaration, schemas and errors; the import's lines go through import-stream.ts, on this
// thread or on the import's own (src/import-worker.ts).
import type { Request, Response } from "express";
import { AppError } from "../../domain/errors.ts";
import { exportKeys, exportNarrowing, recordExport, type ExportedLine } from "../../services/import/export-keys.ts";
import type { ImportNeeds } from "../../services/import/needs.ts";
import { adminAuthor } from "../author.ts";
import { drained } from "../response.ts";
import { route, type Route } from "../route.ts";
import { EXPORT_EXAMPLE, IMPORT_ANSWER_EXAMPLE, IMPORT_EXAMPLE, importAnswerLine } from "./import-examples.ts";
import { exportQuery, importLineObject, importQuery } from "./import-schemas.ts";
import { importStream, streamLines, type AnswerSink, type ImportRequest } from "./import-stream.ts";

const tag = "admin";
export const NDJSON = "application/x-ndjson";

/** Runs an import's stream somewhere else than this thread (src/import-worker.ts). */
export type ImportRunner = (request: ImportRequest, body: AsyncIterable<Buffer>, sink: AnswerSink) => Promise<void>;

export function importRoutes(needs: ImportNeeds & { importRunner?: ImportRunner | undefined }): Route[] {
  return [
    route({
      method: "post", path: "/admin/keys/import", operationId: "importKeys", tag, auth: "admin", query: importQuery,
      refusals: ["unsupported_media_type"],
      summary: "Import keys, tokens and all (NDJSON, one key a line)",
      ok: { status: 200, description: "One line per input line, in order, then a summary line (NDJSON, streamed)" },
      lines: { request: { schema: importLineObject, examples: IMPORT_EXAMPLE }, response: { schema: importAnswerLine, examples: IMPORT_ANSWER_EXAMPLE } },
      handle: async (req, res, { query }) => {
        if (!isNdjson(req)) throw new AppError("unsupported_media_type", `The request body must be NDJSON (Content-Type: ${NDJSON}).`);
        res.writeHead(200, { "Content-Type": `${NDJSON}; charset=utf-8` });
        res.flushHeaders();
        const request: ImportRequest = { by: { actor: { type: "import" }, requestId: req.id }, createDirectory: query.createDirectory };
        const sink = responseSink(req, res);
        await (needs.importRunner ? needs.importRunner(request, req, sink) : importStream(needs, request, req, sink));
        res.end();
      },
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
        await streamLines(responseSink(req, res), exportKeys(needs, narrowing), (key) => (count++, exportedText(key)));
        // Recorded once the keys are out, as many as were written, also when the client stopped reading early.
        await recordExport(needs, count, adminAuthor(req));
        res.end();
      },
    }),
  ];
}

/** Whether a request's body says it is NDJSON. */
const isNdjson = (req: Request) => (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase() === NDJSON;

/** The response as an answer's sink: a write waits for the client to read. */
function responseSink(req: Request, res: Response): AnswerSink {
  return {
    get gone() {
      return req.destroyed;
    },
    async write(chunk) {
      if (res.destroyed) return false;
      return res.write(chunk) || drained(res);
    },
  };
}

/** An exported key as its line: fields left out where the key has none. */
function exportedText(k: ExportedLine): string {
  return JSON.stringify({
    customer: k.customer, domain: k.domain, application: k.application, subscriber: k.subscriber, user: k.user, name: k.name, keyId: k.keyId,
    type: k.type, active: k.active, createdAt: k.createdAt, expiresAt: k.expiresAt ?? undefined, policy: k.policy ?? undefined,
  });
}
