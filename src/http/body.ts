import type { IncomingMessage } from "node:http";

/** Whether a request carries a body at all. */
export function hasBody(req: IncomingMessage): boolean {
  return Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
}

/** Whether a request says its body is JSON (application/json or application/<anything>+json). */
export function isJson(req: IncomingMessage): boolean {
  return /^application\/([a-z0-9.+-]*\+)?json$/i.test((req.headers["content-type"] ?? "").split(";")[0]!.trim());
}

/** The largest request body keyplane reads (docs/api.md, "Errors"), but on LARGE_BODY_PATHS. */
export const BODY_LIMIT = 16 * 1024;

/** Leak reports carry up to 1,000 tokens (docs/leaks.md): their paths take bodies up to 1 MiB. */
export const LARGE_BODY_LIMIT = 1024 * 1024;
export const LARGE_BODY_PATHS: readonly string[] = ["/leaks/github", "/admin/leaks"];

/**
 * The import takes a file of any size, read line by line as it arrives (docs/migration.md): no limit
 * on the whole body, each of its lines bounded instead. Nor is it cut when the whole request takes
 * over 30 s: its answer begins at once, and a request already answering is closed only once its answer
 * is done (refusals.ts).
 */
export const STREAMED_BODY_PATHS: readonly string[] = ["/admin/keys/import"];

const postTo = (req: IncomingMessage, paths: readonly string[]) => {
  const path = (req.url ?? "").split("?")[0]!;
  return req.method === "POST" && paths.some((p) => path === p || path === `${p}/`);
};

/** Whether a request's body is one of those read as a stream, without a limit on its size or its time. */
export const isStreamedBody = (req: IncomingMessage) => postTo(req, STREAMED_BODY_PATHS);

/** The body limit of a request, by its path as the router matches it: exactly, or with one trailing slash. */
export function bodyLimitOf(req: IncomingMessage): number {
  if (isStreamedBody(req)) return Infinity;
  return postTo(req, LARGE_BODY_PATHS) ? LARGE_BODY_LIMIT : BODY_LIMIT;
}

/** The limit as a 413's message says it. */
export const limitText = (limit: number) => (limit >= 1024 * 1024 ? `${limit / (1024 * 1024)} MiB` : `${limit / 1024} KiB`);
