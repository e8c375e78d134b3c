import { z } from "zod";
import type { Route } from "./route.ts";
import { errorObject } from "./schemas.ts";

// /openapi.json: OpenAPI 3.1, generated from the same route declarations and zod schemas that serve
// and validate requests.
const schema = (s: z.ZodType, io: "input" | "output") => z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" });

const ERRORS: Record<string, string> = {
  "400": "Invalid request", "401": "Not authorized", "404": "Not found", "405": "Method not allowed", "409": "Conflict",
  "413": "Body over 16 KiB", "415": "Body not JSON", "503": "Key store unavailable",
};

export function openApiDocument(routes: Route[], version: string): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, "{$1}");
    const parameters = [...r.path.matchAll(/:([A-Za-z]+)/g)].map(([, name]) => ({
      name, in: "path", required: true, schema: { type: "string" },
    }));
    if (r.query) {
      const q = schema(r.query, "input") as { properties?: Record<string, object> };
      for (const [name, s] of Object.entries(q.properties ?? {})) parameters.push({ name, in: "query", required: false, schema: s as never });
    }
    const responses: Record<string, unknown> = {
      [r.ok.status]: {
        description: r.ok.description,
        ...(r.ok.schema && { content: { "application/json": { schema: schema(r.ok.schema, "output") } } }),
      },
    };
    for (const [status, description] of Object.entries(ERRORS)) {
      responses[status] = { description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
    }
    (paths[path] ??= {})[r.method] = {
      summary: r.summary,
      tags: [r.tag],
      security: r.auth === "none" ? [] : [{ [r.auth === "admin" ? "adminToken" : "apiKey"]: [] }],
      parameters,
      ...(r.body && { requestBody: { required: true, content: { "application/json": { schema: schema(r.body, "input") } } } }),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "keyplane", version, description: "API key management for a voice-communications platform." },
    paths,
    components: {
      schemas: { Error: schema(errorObject, "output") },
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: XI followed by 32 hexadecimal digits." },
        adminToken: { type: "http", scheme: "bearer", description: "The admin token (KEYPLANE_ADMIN_TOKEN); opens /admin only." },
      },
    },
  };
}
