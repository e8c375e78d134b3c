import express, { type NextFunction, type Request, type Response } from "express";
import "./request.ts";
import { unauthorized } from "../domain/errors.ts";
import { authenticate } from "../services/verification/authenticate.ts";
import type { RuntimeOptions } from "../runtime/runtime.ts";
import type { DirectoryNeeds } from "../services/directory/needs.ts";
import type { ImportNeeds } from "../services/import/needs.ts";
import type { KeysNeeds } from "../services/keys/needs.ts";
import type { LeaksNeeds } from "../services/leaks/needs.ts";
import type { OperationsNeeds } from "../services/operations/needs.ts";
import type { PolicyNeeds } from "../services/policy/needs.ts";
import type { VerificationNeeds } from "../services/verification/needs.ts";
import type { WebhooksNeeds } from "../services/webhooks/needs.ts";
import { adminRoutes } from "./directory/admin-routes.ts";
import { BODY_LIMIT, hasBody, isJson, isStreamedBody } from "./body.ts";
import { isAdminToken } from "./admin-token.ts";
import { errorHandler, sendError } from "./errors.ts";
import { healthRoutes } from "./operations/health-routes.ts";
import { importRoutes, type ImportRunner } from "./import/import-routes.ts";
import { keysRoutes } from "./keys/keys-routes.ts";
import { verifyRoutes } from "./verification/verify-routes.ts";
import { authRoutes, type AuthHandler } from "./verification/auth-routes.ts";
import type { TrustedProxies } from "./verification/client-address.ts";
import { keyPathRequest } from "./verification/key-path-request.ts";
import { githubAuthenticator, leakBodies, leakRoutes } from "./leaks/leak-routes.ts";
import { consoleRoutes } from "../console/console-routes.ts";
import { openApiDocument } from "./openapi.ts";
import { webhooksRoutes } from "./webhooks/webhook-routes.ts";
import { analyticsRoutes } from "./analytics/analytics-routes.ts";
import type { AnalyticsNeedsToRead } from "../services/analytics/usage-reads.ts";
import { logWhenAnswered, REQUEST_ID, requestId } from "./request-log.ts";
import { mount, type Route } from "./route.ts";

export interface AppOptions {
  adminToken: string;
  runtime: RuntimeOptions;
  version: string;
  /** Whose X-Forwarded-For names the client (KEYPLANE_TRUSTED_PROXIES). */
  trustedProxies: TrustedProxies;
  /** /auth's handler, for its description (it answers in front of the app). */
  auth: AuthHandler;
  /** What the analytics endpoints read with (docs/analytics.md). */
  analytics: AnalyticsNeedsToRead;
}


/**
 * The app mounts every room's routes, so it takes what each of them needs; each route factory is
 * handed this one object and reads only its own rooms' part of it.
 */
export type AppNeeds = KeysNeeds & VerificationNeeds & PolicyNeeds & WebhooksNeeds & LeaksNeeds & DirectoryNeeds & OperationsNeeds & ImportNeeds
  & { importRunner?: ImportRunner | undefined };

export function createApp(ctx: AppNeeds, options: AppOptions): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");

  app.use((req, res, next) => {
    req.id = requestId(req);
    res.setHeader(REQUEST_ID, req.id);
    logWhenAnswered(ctx, req, res, req.id);
    next();
  });
  app.use(requireJsonBody);
  app.use(leakBodies());
  app.use(express.json({ limit: BODY_LIMIT, strict: false, type: isJson }));

  const routes: Route[] = [];
  let openapi: object | undefined;
  routes.push(
    ...healthRoutes(ctx, () => (openapi ??= openApiDocument(routes, options.version))),
    ...adminRoutes(ctx, options.runtime),
    ...keysRoutes(ctx),
    ...verifyRoutes(ctx, options.trustedProxies),
    ...authRoutes(options.auth),
    ...leakRoutes(ctx),
    ...webhooksRoutes(ctx),
    ...importRoutes(ctx),
    ...analyticsRoutes(ctx, options.analytics),
  );
  const router = express.Router({ caseSensitive: true, strict: false });
  mount(router, routes, {
    key: async (req) => {
      req.principal = await authenticate(ctx, req.headers.authorization, keyPathRequest(req, options.trustedProxies));
    },
    admin: async (req) => {
      if (!isAdminToken(req.headers.authorization, options.adminToken)) throw unauthorized("The admin token is required.");
    },
    github: githubAuthenticator(ctx),
  });
  app.use(consoleRoutes());
  app.use(router);
  // The path is not repeated: it may hold a token, and the client has it already.
  app.use((req: Request, res: Response) => sendError(res, "not_found", `No route matches ${req.method} on this path.`));
  app.use(errorHandler(ctx.log));
  return app;
}

/** A request with a body must say it is JSON: anything else is 415 (docs/api.md, "Errors"); the import's route judges its own. */
function requireJsonBody(req: Request, res: Response, next: NextFunction): void {
  if (hasBody(req) && !isJson(req) && !isStreamedBody(req)) {
    sendError(res, "unsupported_media_type", "The request body must be JSON (Content-Type: application/json).");
    return;
  }
  next();
}
