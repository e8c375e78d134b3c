import { z } from "zod";
import { statusOf, type ErrorCode } from "../domain/errors.ts";
import { API_EXAMPLES } from "./examples.ts";
import { leakLabelObject } from "./leaks/leak-schemas.ts";
import { deliveryObject, newWebhookObject, webhookObject } from "./webhooks/webhook-schemas.ts";
import { policyObject } from "./policy/policy-schema.ts";
import { usageObject } from "./policy/usage-schema.ts";
import { analyticsObject, scopeAnalyticsObject } from "./analytics/analytics-schema.ts";
import type { NdjsonLines, Route } from "./route.ts";
import {
  applicationObject, creditsBody, creditsObject, customerObject, domainObject, errorObject, eventObject, healthObject, keyObject, openApiObject, subscriberObject, userObject,
  userWithKeyObject, verdictObject,
} from "./schemas.ts";

// /openapi.json: OpenAPI 3.1, generated from the same route declarations and zod schemas that serve
// and validate requests, so the two cannot drift (the suites check every answer against it too).
// Shared objects are components, referenced; each operation lists exactly what it can answer.

const COMPONENTS = {
  Key: keyObject, Customer: customerObject, Domain: domainObject, Application: applicationObject, Subscriber: subscriberObject,
  User: userObject, UserWithKey: userWithKeyObject, KeyEvent: eventObject, Error: errorObject, Health: healthObject, OpenApiDocument: openApiObject,
  Verdict: verdictObject, Policy: policyObject, Credits: creditsObject, CreditsChange: creditsBody, KeyUsage: usageObject,
  LeakLabel: leakLabelObject, Webhook: webhookObject, NewWebhook: newWebhookObject, WebhookDelivery: deliveryObject,
  KeyAnalytics: analyticsObject, ScopeAnalytics: scopeAnalyticsObject,
} satisfies Record<Exclude<keyof typeof API_EXAMPLES, "requests">, z.ZodType>;

type Component = keyof typeof COMPONENTS;
const ref = (name: string, kind = "schemas") => ({ $ref: `#/components/${kind}/${name}` });

/** Every operation can answer these: a body that is not JSON, too large, malformed or too slow, a bad path, a defect. */
const ALWAYS: ErrorCode[] = ["bad_request", "request_timeout", "payload_too_large", "unsupported_media_type", "internal"];

const ERROR_NAMES: Record<ErrorCode, string> = {
  bad_request: "BadRequest", unauthorized: "Unauthorized", forbidden: "Forbidden", not_found: "NotFound", method_not_allowed: "MethodNotAllowed",
  conflict: "Conflict", request_timeout: "RequestTimeout", payload_too_large: "PayloadTooLarge",
  unsupported_media_type: "UnsupportedMediaType", rate_limited: "RateLimited", usage_exceeded: "UsageExceeded", internal: "Internal", bad_gateway: "BadGateway",
  unavailable: "Unavailable",
};

const ERROR_TEXT: Record<ErrorCode, string> = {
  bad_request: "The request is not valid: its body, query or path.",
  unauthorized: "No valid, active key (or admin token), or a key whose scope does not reach the path.",
  forbidden: "The caller may not do this: a key changing its own policy or credits, a policy it may not set, or a key whose policy's restrictions refuse this request (its client address, referrer, method or path).",
  not_found: "No such entity or key here.",
  method_not_allowed: "The path exists, but not with this method.",
  conflict: "The name is taken, or the key was already rotated.",
  request_timeout: "The request's headers took over 10 s, or its whole body over 30 s, to arrive.",
  payload_too_large: "The body is over 16 KiB (1 MiB for a leak report, which also may not hold over 1,000 tokens).",
  unsupported_media_type: "The body is not JSON.",
  rate_limited: "Too many failed authentications from this client; on /auth also a rate limit of the key's policies, reached (with the RateLimit and RateLimit-Policy fields).",
  usage_exceeded: "The key's credits are used up: Retry-After says when they refill, and is absent when they never do.",
  internal: "An unexpected error.",
  bad_gateway: "The voice application has no url, cannot be reached, or did not answer in time.",
  unavailable: "The key store cannot be reached.",
};

const PARAMETERS: Record<string, string> = {
  customer: "A customer: its id (digits), uuid or name; on key paths also `self`, the caller's own.",
  domain: "A domain: its id, uuid or DNS name; on key paths also `self`.",
  application: "A voice application: its id, uuid or name (within the domain; on a path without one, the caller's domain); on key paths also `self`.",
  subscriber: "A subscriber: its msisdn first (within the domain, or the caller's), then id, then uuid; on key paths also `self`.",
  user: "A user: its id, uuid or email.",
  keyId: "A key: its keyId (the token) or, to keep tokens out of URLs, its numeric id; or `self`, the calling key, where it lies inside the path's scope.",
  webhookId: "A webhook: its numeric id.",
  path: "The original request's path, as Envoy's ext_authz path_prefix sends it: any number of segments (/auth/a/b/c too), which an OpenAPI path parameter cannot state.",
};

const TAGS: Record<string, string> = {
  health: "Liveness, readiness and this document.",
  admin: "The platform's directory (customers, domains, voice applications, subscribers, users), with the admin token.",
  keys: "The calling key's own scope, at /keys, and the events of the keys it may manage, at /events.",
  "customer keys": "Keys under /customers/{customer} (also spelled /tenants): for customer-level keys of that customer.",
  "domain keys": "Keys under /domains/{domain}: for keys of that domain or above.",
  "application keys": "Keys of one voice application, or above it.",
  "subscriber keys": "Keys of one subscriber, or above it.",
  verification: "Verdicts for the platform's own services: may a token do a method on a platform path.",
  webhooks: "Lifecycle webhooks: the calling key's, for the keys inside its scope, signed as Standard Webhooks 1.0 (docs/webhooks.md).",
  analytics: "Usage analytics: verdicts of /verify and /auth by outcome over time, for the keys the caller may manage (docs/analytics.md).",
  leaks: "Leak reports: tokens found in public, from GitHub's secret scanning or, through the admin, any other scanner (docs/leaks.md).",
};

const registry = z.registry<{ id: string }>();
for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });

/**
 * A request's body or query, inline, except the components inside it (a policy), which it refers to:
 * described once, so the document stays small. (A component inside a request has no transform, so its
 * input and output are one schema.)
 */
function schemaOf(s: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(s, {
    target: "draft-2020-12", io: "input", unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      const named = byIdentity.get(zodSchema as unknown as z.ZodType);
      if (!named) return;
      for (const field of Object.keys(jsonSchema)) delete (jsonSchema as Record<string, unknown>)[field];
      jsonSchema.$ref = `#/components/schemas/${named}`;
    },
  }) as Record<string, unknown>;
}
const byIdentity = new Map<z.ZodType, Component>(Object.entries(COMPONENTS).map(([id, s]) => [s, id as Component]));

/** The component a schema allows beside null (`Policy` of `policyObject.nullable()`), if it is one such. */
function nullableComponent(schema: z.ZodType): Component | undefined {
  const { def } = (schema as unknown as { _zod: { def: { type: string; innerType?: z.ZodType } } })._zod;
  return def.type === "nullable" && def.innerType ? byIdentity.get(def.innerType) : undefined;
}

/**
 * A response body: a component by $ref (or an array of one, or one or null), with its example, also
 * by $ref: each example is written once, in components.examples, however many operations answer it.
 */
function content(schema: z.ZodType): object {
  const named = byIdentity.get(schema);
  if (named) return { "application/json": { schema: ref(named), examples: { [named]: ref(named, "examples") } } };
  // A component or null (an entity's policy, when it has none).
  const inner = nullableComponent(schema);
  if (inner) return { "application/json": { schema: { anyOf: [ref(inner), { type: "null" }] }, examples: { [inner]: ref(inner, "examples") } } };
  const element = (schema as { element?: z.ZodType }).element;
  const item = element && byIdentity.get(element);
  if (item) return { "application/json": { schema: { type: "array", items: ref(item) }, examples: { [`${item}List`]: ref(`${item}List`, "examples") } } };
  throw new Error("every response schema of the API is a component, or an array of one");
}

/** components.examples: each component's example, and a list of one for each. */
function examples(): Record<string, { value: unknown }> {
  const names = Object.keys(COMPONENTS) as Component[];
  return Object.fromEntries(names.flatMap((name) => [[name, { value: API_EXAMPLES[name] }], [`${name}List`, { value: [API_EXAMPLES[name]] }]]));
}

function withoutIds(json: Record<string, unknown>): Record<string, unknown> {
  const { $id: _id, $schema: _schema, ...rest } = json;
  return rest;
}

/** A request body's schema: a component's by $ref, any other inline. */
function bodySchema(body: z.ZodType): object {
  const named = byIdentity.get(body);
  return named ? ref(named) : withoutIds(schemaOf(body));
}

/** A request body's example: the operation's own, else its component's (a policy's, a credits change's). */
function requestExample(operationId: string, body: z.ZodType): unknown {
  const own = API_EXAMPLES.requests[operationId];
  if (own !== undefined) return own;
  const named = byIdentity.get(body) ?? nullableComponent(body);
  return named ? API_EXAMPLES[named] : {};
}

function queryParameters(query: z.ZodType): object[] {
  const q = schemaOf(query) as { properties?: Record<string, { enum?: unknown[]; description?: string }> };
  return Object.entries(q.properties ?? {}).map(([name, s]) => {
    // A filter that takes true or false is a boolean to a client, whatever the query string carries.
    const flag = s.enum?.length === 2 && s.enum.includes("true") && s.enum.includes("false");
    return { name, in: "query", required: false, schema: flag ? { type: "boolean" } : withoutIds(s) };
  });
}

/** What an operation can answer besides its success, by the error catalogue's codes. */
export function refusalsOf(r: Route): ErrorCode[] {
  const codes = new Set<ErrorCode>(ALWAYS);
  if (r.auth !== "none") codes.add("unauthorized");
  if (r.auth !== "none" && r.database !== false) codes.add("unavailable");
  // A client over its failed authentications gets 429 wherever it presents a key (docs/gateways.md), and
  // a key whose policy's restrictions refuse the request 403 (docs/api.md, "Key policy").
  if (r.auth === "key") codes.add("rate_limited").add("forbidden");
  for (const code of r.refusals ?? []) codes.add(code);
  return [...codes].sort((a, b) => statusOf(a) - statusOf(b));
}

/** The security scheme of each kind of caller. */
const SECURITY = { key: "apiKey", admin: "adminToken", github: "githubSignature" } as const;

function operation(r: Route): object {
  const params = [...r.path.matchAll(/:([A-Za-z]+)/g)].map(([, name]) => ref(name!, "parameters"));
  const headers = { "X-Request-Id": ref("XRequestId", "headers"), ...Object.fromEntries((r.ok.headers ?? []).map((h) => [h, ref(h, "headers")])) };
  // invoke passes the application's own answer on, whatever its status: the default response.
  const responses: Record<string, object> = r.operationId === "invokeApplication"
    ? { default: { description: r.ok.description, headers, content: { "*/*": { schema: {}, example: { answered: true } } } } }
    : { [r.ok.status]: { description: r.ok.description, headers, ...(r.ok.schema && { content: content(r.ok.schema) }), ...(r.lines && { content: ndjson(r.lines.response) }) } };
  for (const code of refusalsOf(r)) responses[statusOf(code)] = ref(ERROR_NAMES[code], "responses");
  return {
    operationId: r.operationId,
    summary: r.summary,
    tags: [r.tag],
    security: r.auth === "none" ? [] : [{ [SECURITY[r.auth]]: [] }],
    ...((params.length || r.query) && { parameters: [...params, ...(r.query ? queryParameters(r.query) : [])] }),
    ...(r.body && {
      requestBody: {
        // Required exactly when an empty body would be refused (an empty PUT changes nothing, and is valid).
        required: r.bodyRequired === true || !r.body.safeParse({}).success,
        content: { "application/json": { schema: bodySchema(r.body), example: requestExample(r.operationId, r.body) } },
      },
    }),
    ...(r.lines?.request && { requestBody: { required: true, content: ndjson(r.lines.request) } }),
    responses,
  };
}

/** An NDJSON body: the schema of each of its lines, and examples of a few lines, one by one. */
function ndjson(lines: NdjsonLines): object {
  const examples = Object.fromEntries(lines.examples.map((value, i) => [`line${i + 1}`, { value }]));
  return { "application/x-ndjson": { schema: withoutIds(schemaOf(lines.schema)), examples } };
}

/** The examples some operation refers to: an unused component is a linter's warning. */
function referred<T>(all: Record<string, T>, paths: object): Record<string, T> {
  const text = JSON.stringify(paths);
  return Object.fromEntries(Object.entries(all).filter(([name]) => text.includes(`"#/components/examples/${name}"`)));
}

const pathOf = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

/**
 * A path item's address as a URI fragment: a JSON pointer (RFC 6901: `~0` for `~`, `~1` for `/`) whose
 * characters a fragment may not hold (RFC 3986 3.5), such as a template's `{` and `}`, percent-encoded.
 */
export function pathPointer(template: string): string {
  const token = template.replaceAll("~", "~0").replaceAll("/", "~1");
  return `#/paths/${token.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]/g, (c) => encodeURIComponent(c))}`;
}

export function openApiDocument(routes: Route[], version: string): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    // Another spelling of a path is that path's item by reference: described once, never copied.
    if (r.aliasOf) paths[pathOf(r.path)] = { $ref: pathPointer(pathOf(r.aliasOf)) };
    else (paths[pathOf(r.path)] ??= {})[r.method] = operation(r);
  }
  const used = new Set(routes.map((r) => r.tag));
  const answered = new Set<ErrorCode>(["method_not_allowed", ...routes.flatMap(refusalsOf)]);
  const components = z.toJSONSchema(registry, { target: "draft-2020-12", io: "output", unrepresentable: "any", uri: (id) => `#/components/schemas/${id}` }) as {
    schemas: Record<string, Record<string, unknown>>;
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "keyplane",
      version,
      summary: "API key management for a voice-communications platform.",
      description:
        "Keys in the hierarchy customer > domain > voice application / subscriber, plus users' keys. Every key path is also " +
        "spelled with `apikeys` for `keys`, and `customers` as `tenants`: those paths refer to the same operations. A known " +
        "path asked with a method it does not take answers 405 with an `Allow` header (components.responses.MethodNotAllowed); " +
        "an unknown path 404.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "http://127.0.0.1:8080", description: "keyplane as `npm start` runs it" }],
    tags: Object.entries(TAGS).filter(([name]) => used.has(name)).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(components.schemas).map(([id, s]) => [id, withoutIds(s)])),
      examples: referred(examples(), paths),
      parameters: Object.fromEntries(Object.entries(PARAMETERS).map(([name, description]) => [name, { name, in: "path", required: true, description, schema: { type: "string", minLength: 1 } }])),
      headers: {
        XRequestId: { description: "The request's id: the client's X-Request-Id when sane, else a new one.", schema: { type: "string" } },
        "WWW-Authenticate": { description: 'Bearer realm="keyplane"', schema: { type: "string" } },
        Link: { description: 'The next page of a list: `<...>; rel="next"`, while more remain.', schema: { type: "string" } },
        Allow: { description: "The methods the path takes.", schema: { type: "string" } },
        "Retry-After": {
          description: "Whole seconds until the request may pass: the client's failed authentications back under the limit (1 to 60), or on /auth the end of the rate-limit window that refused it.",
          schema: { type: "integer", minimum: 1 }, example: 42,
        },
        "X-Keyplane-Key-Id": { description: "The key's numeric id (never its token).", schema: { type: "string" }, example: "17" },
        "X-Keyplane-Key-Type": { description: "The key's type: customer, user, application or subscriber.", schema: { type: "string" }, example: "customer" },
        "X-Keyplane-Level": { description: "The key's level: customer, domain, application or subscriber.", schema: { type: "string" }, example: "domain" },
        "X-Keyplane-Customer-Id": { description: "The key's customer's id.", schema: { type: "string" }, example: "1" },
        "X-Keyplane-Customer": { description: "The key's customer's name (outside printable ASCII, and `%`, percent-encoded UTF-8).", schema: { type: "string" }, example: "acme" },
      },
      // The refusals some operation can answer, and 405, which answers the methods no operation takes.
      responses: Object.fromEntries(Object.entries(ERROR_NAMES).filter(([code]) => answered.has(code as ErrorCode)).map(([code, name]) => {
        const status = statusOf(code as ErrorCode);
        const headers = {
          "X-Request-Id": ref("XRequestId", "headers"),
          ...(status === 401 && { "WWW-Authenticate": ref("WWW-Authenticate", "headers") }),
          ...(status === 405 && { Allow: ref("Allow", "headers") }),
          // Credits that never refill have no time to retry after.
          ...(status === 429 && code !== "usage_exceeded" && { "Retry-After": ref("Retry-After", "headers") }),
        };
        const example = { status, error: code, message: ERROR_TEXT[code as ErrorCode] };
        return [name, { description: ERROR_TEXT[code as ErrorCode], headers, content: { "application/json": { schema: ref("Error"), example } } }];
      })),
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: XI followed by 32 upper-case hexadecimal digits." },
        adminToken: { type: "http", scheme: "bearer", description: "The admin token (KEYPLANE_ADMIN_TOKEN); opens /admin only." },
        githubSignature: {
          type: "apiKey", in: "header", name: "Github-Public-Key-Signature",
          description: "GitHub's secret scanning signature: base64 of a DER ECDSA P-256 SHA-256 signature over the raw body, by the key that " +
            "Github-Public-Key-Identifier names in https://api.github.com/meta/public_keys/secret_scanning (docs/leaks.md).",
        },
      },
    },
  };
}
