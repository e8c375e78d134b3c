// leaks/ of http/: GitHub's secret scanning endpoint and POST /admin/leaks, and their schemas. It may use
// domain/, http/'s top files and services/ (leaks, keys).

import express, { type Request, type RequestHandler, type Router } from "express";
import { AppError, badRequest } from "../../domain/errors.ts";
import { scanner } from "../../domain/keys/key-event.ts";
import { LEAK_REPORTS_MAX, type LeakReport } from "../../domain/leaks/leak-report.ts";
import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { LeaksNeeds } from "../../services/leaks/needs.ts";
import { reportLeaks } from "../../services/leaks/leaks.ts";
import { isJson, LARGE_BODY_LIMIT, limitText } from "../body.ts";
import { adminReportsBody, githubReportsBody, leakLabelObject } from "./leak-schemas.ts";
import { route, type Authenticator, type Route } from "../route.ts";

// Leak reports (docs/leaks.md): GitHub's secret scanning partner program at /leaks/github, signed by
// GitHub, and any other scanner through the admin at /admin/leaks. Both take bodies up to 1 MiB; GitHub's
// is kept as bytes until its signature, which is over those bytes, has been checked.
const GITHUB = "/leaks/github";
const ADMIN = "/admin/leaks";
const tag = "leaks";
const answered = { status: 200, description: "One label per token, in the report's order", schema: leakLabelObject.array() };

export function leakRoutes(ctx: LeaksNeeds & KeysNeeds): Route[] {
  return [
    route({
      method: "post", path: GITHUB, operationId: "reportGithubLeaks", tag, auth: "github", body: githubReportsBody, bodyRequired: true,
      summary: "GitHub's secret scanning: tokens found in public, each labelled, each live key acted on by its leak policy",
      ok: answered,
      handle: async (req, res, { body }) => {
        const reports = upTo(body).map((r): LeakReport => ({ token: r.token, type: r.type ?? null, url: r.url ?? null, source: r.source ?? null }));
        res.json(await reportLeaks(ctx, reports, scanner("github", req.id)));
      },
    }),
    route({
      method: "post", path: ADMIN, operationId: "reportLeaks", tag, auth: "admin", body: adminReportsBody, bodyRequired: true,
      summary: "Another scanner's report, through the admin: tokens found in public, each labelled, each live key acted on",
      ok: answered,
      handle: async (req, res, { body }) => {
        const reports = upTo(body.tokens).map((token): LeakReport => ({ token, type: null, url: body.url ?? null, source: body.source ?? null }));
        res.json(await reportLeaks(ctx, reports, scanner("admin", req.id)));
      },
    }),
  ];
}

function upTo<T>(tokens: T[]): T[] {
  if (tokens.length > LEAK_REPORTS_MAX) throw new AppError("payload_too_large", `A report may hold at most ${LEAK_REPORTS_MAX} tokens.`);
  return tokens;
}

/**
 * The leak paths' bodies, read before the app's own parser (which then leaves them be): GitHub's as
 * bytes, the admin's as JSON, each up to 1 MiB.
 */
export function leakBodies(): Router {
  const router = express.Router({ caseSensitive: true, strict: false });
  router.post(GITHUB, limited(express.raw({ limit: LARGE_BODY_LIMIT, type: isJson })));
  router.post(ADMIN, limited(express.json({ limit: LARGE_BODY_LIMIT, strict: false, type: isJson })));
  return router;
}

/** A parser whose 413 says this path's limit. */
function limited(parser: RequestHandler): RequestHandler {
  return (req, res, next) =>
    parser(req, res, (error?: unknown) => {
      const tooLarge = (error as { type?: unknown } | undefined)?.type === "entity.too.large";
      next(tooLarge ? new AppError("payload_too_large", `The request body is larger than ${limitText(LARGE_BODY_LIMIT)}.`) : error);
    });
}

/** GitHub's signature over the body's bytes, checked before anything in the body is read; then the body is parsed. */
export function githubAuthenticator(ctx: LeaksNeeds & KeysNeeds): Authenticator {
  return async (req: Request) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    await ctx.githubKeys.verify(raw, header(req, "github-public-key-identifier"), header(req, "github-public-key-signature"));
    req.body = raw.length === 0 ? undefined : json(raw);
  };
}

const header = (req: Request, name: string) => {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

function json(raw: Buffer): unknown {
  try {
    return JSON.parse(utf8.decode(raw));
  } catch {
    throw badRequest("The request body is not valid JSON.");
  }
}
