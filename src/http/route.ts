import type { NextFunction, Request, Response, Router } from "express";
import type { z } from "zod";
import { badRequest, type ErrorCode } from "../domain/errors.ts";
import { sendError } from "./errors.ts";

// A route is declared once, as data: express serves it and /openapi.json describes it from the same
// declaration, so the two cannot drift. Every handler runs in the same order: authenticate ->
// validate -> (the handler:) load -> authorize -> act -> respond.
/** The methods an OpenAPI path item can name. */
export const METHODS = ["get", "post", "put", "delete", "patch", "head", "options", "trace"] as const;
export type Method = (typeof METHODS)[number];

export interface Route<B = unknown, Q = unknown> {
  method: Method;
  path: string;
  /** The operation's id in /openapi.json: stable, readable, unique (listCustomerKeys, rotateKey...). */
  operationId: string;
  /** Set on another spelling of a path (`apikeys`, `tenants`): the path it is another name for. */
  aliasOf?: string;
  summary: string;
  tag: string;
  /** Who may call it: a key, the admin token, GitHub (a report it signed: docs/leaks.md), or anyone. */
  auth: Auth;
  body?: z.ZodType<B>;
  /** The body must be sent, even where an empty one would pass its schema (a policy: `{}` is one). */
  bodyRequired?: boolean;
  query?: z.ZodType<Q>;
  ok: { status: number; description: string; schema?: z.ZodType; headers?: string[] };
  /** An operation that takes or answers NDJSON (the import and the export): the schema of one line of each, with an example. */
  lines?: { request?: NdjsonLines; response: NdjsonLines };
  /** What else this operation can answer, beyond what every operation can (see openapi.ts). */
  refusals?: ErrorCode[];
  /** false for the few operations that answer without the database (/healthz, /openapi.json). */
  database?: boolean;
  handle: (req: Request, res: Response, input: { body: B; query: Q }) => Promise<void> | void;
}

export interface NdjsonLines {
  schema: z.ZodType;
  /** A few lines, each as its JSON value. */
  examples: object[];
}

export type Auth = "key" | "admin" | "github" | "none";
export type Authenticator = (req: Request) => Promise<void>;

/** Declares a route with its input types inferred from its schemas. */
export function route<B = undefined, Q = undefined>(r: Route<B, Q>): Route {
  return r as unknown as Route;
}

export function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message));
  throw badRequest(`Invalid ${where}: ${issues.join("; ")}.`);
}

export function mount(router: Router, routes: Route[], authenticators: Record<Exclude<Auth, "none">, Authenticator>): void {
  for (const r of routes) {
    router[r.method](r.path, async (req: Request, res: Response, next: NextFunction) => {
      try {
        if (r.auth !== "none") await authenticators[r.auth](req);
        if (r.bodyRequired && req.body === undefined) throw badRequest("This request needs a JSON body.");
        const body = parse(r.body, r.body && req.body === undefined ? {} : req.body, "request body");
        const query = parse(r.query, req.query, "query");
        await r.handle(req, res, { body, query });
      } catch (error) {
        next(error);
      }
    });
  }
  // A known path with a method it does not take: 405 with the methods it does.
  const byPath = Map.groupBy(routes, (r) => r.path);
  for (const [path, group] of byPath) {
    const allow = group.map((r) => r.method.toUpperCase()).join(", ");
    router.all(path, (req, res) => {
      res.setHeader("Allow", allow);
      sendError(res, "method_not_allowed", `${req.method} is not allowed here; allowed: ${allow}.`);
    });
  }
}
