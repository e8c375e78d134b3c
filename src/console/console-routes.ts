import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import express, { type NextFunction, type Response, type Router } from "express";
import { sendError } from "../http/errors.ts";

// The console (docs/adr/0015-console.md): a page for people, served as it is from src/console/public
// (plain ES modules, no build), that does everything through the REST API like any other client. Its
// answers carry a Content-Security-Policy that lets the page load nothing but its own files and talk
// to nothing but this origin, so a mistake in the page cannot send a key elsewhere.

const PUBLIC = fileURLToPath(new URL("./public/", import.meta.url));

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  // The page builds its DOM from nodes and text alone: no string ever reaches an HTML sink.
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** The headers of every console answer: nothing inline, nothing framed, no referrer, no stale page after a release. */
function secure(res: Response): void {
  res.setHeader("Content-Security-Policy", CONSOLE_CSP);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
  res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
  // Revalidated on every load (ETag, Last-Modified), so a new release's modules are never mixed with old ones.
  res.setHeader("Cache-Control", "no-cache");
}

/**
 * The kinds of file the page is made of, in public/ or one of its rooms (keys/, webhooks/...); anything
 * else there (an editor's backup, notes) is never served.
 */
const ASSET = /^([a-z0-9-]+\/)?[a-z0-9-]+\.(js|css|svg)$/;

/**
 * GET /console, and the page's own files under /console/{asset} and /console/{room}/{asset}: those in
 * public/ when the process started, and nothing else.
 */
export function consoleRoutes(): Router {
  const assets = new Set(readdirSync(PUBLIC, { recursive: true, encoding: "utf8" }).filter((name) => ASSET.test(name)));
  const router = express.Router({ caseSensitive: true });
  router.get("/console", (_req, res) => {
    secure(res);
    res.sendFile("index.html", { root: PUBLIC });
  });
  const serve = (asset: string, res: Response, next: NextFunction) => {
    if (!assets.has(asset)) return next();
    secure(res);
    res.sendFile(asset, { root: PUBLIC });
  };
  router.get("/console/:asset", (req, res, next) => serve(req.params.asset, res, next));
  router.get("/console/:room/:asset", (req, res, next) => serve(`${req.params.room}/${req.params.asset}`, res, next));
  // One route per path, so that logs and metrics name each by its own pattern.
  for (const path of ["/console", "/console/:asset", "/console/:room/:asset"]) {
    router.all(path, (req, res, next) => {
      if (req.method === "GET" || req.method === "HEAD") return next();
      res.setHeader("Allow", "GET, HEAD");
      sendError(res, "method_not_allowed", `${req.method} is not allowed here; allowed: GET, HEAD.`);
    });
  }
  return router;
}
