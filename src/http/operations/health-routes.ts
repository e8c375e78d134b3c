// operations/ of http/: health and readiness, and the metrics server. It may use http/'s top files and
// services/operations/.

import type { OperationsNeeds } from "../../services/operations/needs.ts";
import { isReady } from "../../services/operations/health.ts";
import { sendError } from "../errors.ts";
import { route, type Route } from "../route.ts";
import { healthObject, openApiObject } from "../schemas.ts";

export function healthRoutes(ctx: OperationsNeeds, openapi: () => object): Route[] {
  return [
    route({
      method: "get", path: "/healthz", operationId: "getLiveness", tag: "health", auth: "none", database: false, summary: "The process is alive",
      ok: { status: 200, description: "Alive", schema: healthObject },
      handle: (_req, res) => void res.json({ status: "ok" }),
    }),
    route({
      method: "get", path: "/readyz", operationId: "getReadiness", tag: "health", auth: "none", refusals: ["unavailable"],
      summary: "The database is reachable and migrated",
      ok: { status: 200, description: "Ready", schema: healthObject },
      handle: async (_req, res) => {
        if (await isReady(ctx)) res.json({ status: "ok" });
        else sendError(res, "unavailable", "The key store is not reachable or not migrated.");
      },
    }),
    route({
      method: "get", path: "/openapi.json", operationId: "getOpenApiDocument", tag: "health", auth: "none", database: false,
      summary: "This API's OpenAPI 3.1 description",
      ok: { status: 200, description: "The OpenAPI document", schema: openApiObject },
      handle: (_req, res) => void res.json(openapi()),
    }),
  ];
}
