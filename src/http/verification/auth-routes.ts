import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { StoredKey } from "../../domain/model.ts";
import { levelOf } from "../../domain/scope/scope.ts";
import { bearerToken } from "../../services/verification/authenticate.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { after, runNowOrLater, type Maybe } from "../../services/maybe.ts";
import { verifyRequest, type Verdict } from "../../services/verification/verify.ts";
import { clientAddress, type TrustedProxies } from "./client-address.ts";
import { statusOf, type ErrorCode } from "../../domain/errors.ts";
import { restrictedMessage } from "../../services/verification/authenticate.ts";
import type { PolicyReport } from "../../services/policy/policy-check.ts";
import { answerError, BEARER_CHALLENGE, errorBody, sendUnauthorized } from "../errors.ts";
import { echoRequestId, logWhenAnswered, REQUEST_ID, requestId, type Answering } from "../request-log.ts";
import { METHODS, route, type Method, type Route } from "../route.ts";
import { AUTH, GATEWAY_HEADERS, originalRequestReader, type AuthGateway, type OriginalRequestReader } from "./auth-gateway.ts";

// /auth: forward authentication for gateways (docs/gateways.md). Any method on /auth and /auth/...;
// the original request's method and path come from the one gateway KEYPLANE_AUTH_GATEWAY names
// (auth-gateway.ts). It is answered here, before express, as GET /keys/self is: a gateway asks it for
// every request it passes.

/** A name as a header value: printable ASCII as it is; other characters, and `%`, percent-encoded as UTF-8. */
export function headerText(name: string): string {
  return name.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}

/** What the upstream learns of the caller: never the token. */
export function identityHeaders(key: StoredKey): Record<string, string> {
  const headers: Record<string, string> = {
    "X-Keyplane-Key-Id": String(key.id),
    "X-Keyplane-Key-Type": key.type,
    "X-Keyplane-Level": levelOf(key),
    "X-Keyplane-Customer-Id": String(key.tenantId),
    "X-Keyplane-Customer": headerText(key.tenant.name),
  };
  if (key.domainId !== null) headers["X-Keyplane-Domain-Id"] = String(key.domainId);
  if (key.domain) headers["X-Keyplane-Domain"] = headerText(key.domain.domain);
  if (key.applicationId !== null) headers["X-Keyplane-Application-Id"] = String(key.applicationId);
  if (key.subscriberId !== null) headers["X-Keyplane-Subscriber-Id"] = String(key.subscriberId);
  if (key.userId !== null) headers["X-Keyplane-User-Id"] = String(key.userId);
  return headers;
}

// The refusals of /auth, with their challenges (RFC 6750, section 3.1).
const NO_TOKEN = [BEARER_CHALLENGE, "An Authorization: Bearer <API key> header is required."] as const;
const FORBIDDEN = [`${BEARER_CHALLENGE}, error="insufficient_scope"`, "This key may not reach this path with this method."] as const;
const INVALID = [`${BEARER_CHALLENGE}, error="invalid_token"`, "The key is malformed, unknown, disabled or expired."] as const;

/**
 * The 400 of a request without the gateway's path header, or with two: a gateway other than the one
 * configured, or a client that went around it. Envoy's mode reads no header, and never answers it.
 */
function missingHeaderMessage(gateway: AuthGateway): string {
  if (gateway === "envoy") return "";
  return `Exactly one ${GATEWAY_HEADERS[gateway].uri} header is required (KEYPLANE_AUTH_GATEWAY=${gateway}); other gateways' headers are ignored.`;
}

const RATE_LIMITED = "A rate limit of this key's policies is reached; try again when its window ends.";
const USAGE_EXCEEDED = "This key's credits are used up.";

/**
 * What a gateway passes on to the client of a key with limits or credits (docs/gateways.md, "Key
 * policy"): the IETF RateLimit fields of the limit with the least remaining (on a 200 and on a limit's
 * 429), the nearest balance, and on a 429 Retry-After (none when the balance never refills).
 */
export function policyHeaders(policy: PolicyReport | undefined, limits: boolean): string[] {
  const headers: string[] = [];
  if (policy === undefined) return headers;
  if (policy.retryAfter !== undefined) headers.push("Retry-After", String(policy.retryAfter));
  if (limits && policy.tightest) {
    const { report, windowSeconds } = policy.tightest;
    headers.push("RateLimit-Policy", `"${report.name}";q=${report.limit};w=${windowSeconds}`, "RateLimit", `"${report.name}";r=${report.remaining};t=${report.reset}`);
  }
  if (policy.credits) headers.push("X-Keyplane-Credits-Remaining", String(policy.credits.remaining));
  return headers;
}

/** A 403 or 429 with the JSON error body and its headers, in one writeHead as the other answers of /auth. */
function sendRefusal(res: ServerResponse, code: ErrorCode, message: string, headers: string[], reqId: string): void {
  const body = errorBody(code, message);
  res.writeHead(statusOf(code), ["Content-Type", "application/json; charset=utf-8", "Content-Length", String(Buffer.byteLength(body)), ...headers, REQUEST_ID, reqId]);
  res.end(body);
}

export class AuthHandler {
  readonly #ctx: VerificationNeeds;
  readonly #trusted: TrustedProxies;
  readonly #original: OriginalRequestReader;
  readonly #missingHeader: string;
  // Each cached key's headers, worked out once, as writeHead takes them (names and values in one
  // list): the verification cache hands out the same object until the key changes, and a changed key
  // is a new object.
  readonly #identities = new WeakMap<StoredKey, string[]>();

  constructor(ctx: VerificationNeeds, trusted: TrustedProxies, gateway: AuthGateway) {
    this.#ctx = ctx;
    this.#trusted = trusted;
    this.#original = originalRequestReader(gateway);
    this.#missingHeader = missingHeaderMessage(gateway);
  }

  /**
   * Answers /auth: 200 with the identity headers, 400, 401, 403, 429 or 503, at once when the caches know
   * the verdict and this process holds what the key's limits and credits need; the request log learns
   * the key.
   */
  answer(req: IncomingMessage, res: ServerResponse, reqId: string, answering?: Answering): Maybe<void> {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return sendUnauthorized(res, ...NO_TOKEN, reqId);
    const original = this.#original(req);
    if (original === undefined) return sendRefusal(res, "bad_request", this.#missingHeader, [], reqId);
    const { method, path } = original;
    const client = clientAddress(req, this.#trusted);
    const referrer = req.headers.referer;
    // The client whose address a policy's `ips` judge is the one throttling counts (docs/gateways.md, "Client address").
    const verdict = verifyRequest(this.#ctx, { endpoint: "auth", client, token, method, path, ip: client, referrer, cost: 1 });
    return after(verdict, (v) => this.#send(res, reqId, v, answering));
  }

  #send(res: ServerResponse, reqId: string, verdict: Verdict, answering?: Answering): void {
    if (!("key" in verdict)) return sendUnauthorized(res, ...INVALID, reqId);
    if (answering) answering.key = verdict.key.id;
    switch (verdict.code) {
      case "FORBIDDEN":
        return sendUnauthorized(res, ...FORBIDDEN, reqId);
      case "RESTRICTED":
        return sendRefusal(res, "forbidden", restrictedMessage(verdict.reason!), [], reqId);
      case "RATE_LIMITED":
        return sendRefusal(res, "rate_limited", RATE_LIMITED, policyHeaders(verdict.policy, true), reqId);
      case "USAGE_EXCEEDED":
        return sendRefusal(res, "usage_exceeded", USAGE_EXCEEDED, policyHeaders(verdict.policy, false), reqId);
    }
    let headers = this.#identities.get(verdict.key);
    if (!headers) this.#identities.set(verdict.key, (headers = Object.entries({ ...identityHeaders(verdict.key), "Content-Length": "0" }).flat()));
    res.writeHead(200, verdict.policy === undefined ? [...headers, REQUEST_ID, reqId] : [...headers, ...policyHeaders(verdict.policy, true), REQUEST_ID, reqId]);
    res.end();
  }

  /** The handler of /auth in front of `next`, which gets every other request. */
  inFrontOf(next: RequestListener): RequestListener {
    return (req, res) => {
      if (!AUTH.test(req.url ?? "")) return next(req, res);
      const reqId = requestId(req);
      const answering: Answering = { route: "/auth" };
      logWhenAnswered(this.#ctx, req, res, reqId, answering);
      runNowOrLater(() => this.answer(req, res, reqId, answering), (error) => answerError(echoRequestId(res, reqId), error, this.#ctx.log, reqId));
    };
  }
}

const IDENTITY = ["X-Keyplane-Key-Id", "X-Keyplane-Key-Type", "X-Keyplane-Level", "X-Keyplane-Customer-Id", "X-Keyplane-Customer"] as const;

/**
 * /auth as /openapi.json describes it: one operation for each method an OpenAPI path item can name,
 * since the handler answers them all. Requests never reach these routes (AuthHandler.inFrontOf answers
 * them first, any method); they answer the same way if they do.
 */
export function authRoutes(handler: AuthHandler): Route[] {
  const described = (method: Method, path: string, operationId: string) =>
    route({
      method, path, operationId, tag: "verification", auth: "none", refusals: ["bad_request", "unauthorized", "forbidden", "rate_limited", "usage_exceeded", "unavailable"],
      summary: "Forward authentication for gateways (nginx auth_request, Traefik forwardAuth, Envoy ext_authz): any method, those OpenAPI cannot name too",
      ok: {
        status: 200,
        description:
          "The key may reach the original path with the original method, read from one gateway's headers as " +
          "KEYPLANE_AUTH_GATEWAY says (nginx, the default: X-Original-Method and X-Original-URI; traefik: X-Forwarded-Method and " +
          "X-Forwarded-Uri; envoy: this request's own method and its path after /auth), never another's; the query is ignored. " +
          "In nginx and traefik mode a request without its gateway's path header is 400 `bad_request`. Empty body; the identity headers for the upstream, and, where the key has them, X-Keyplane-Domain-Id, " +
          "X-Keyplane-Domain, X-Keyplane-Application-Id, X-Keyplane-Subscriber-Id, X-Keyplane-User-Id. A 401 says " +
          'error="invalid_token" or error="insufficient_scope" in WWW-Authenticate. For a key with rate limits, the 200 ' +
          'and a limit\'s 429 carry the IETF RateLimit fields of the limit with the least remaining (`RateLimit-Policy: "calls";q=100;w=1`, ' +
          '`RateLimit: "calls";r=42;t=1`); for a key with credits, X-Keyplane-Credits-Remaining (after this request). A key ' +
          "whose policy's restrictions refuse the request is 403 `forbidden`; its credits used up, 429 `usage_exceeded`.",
        headers: [...IDENTITY],
      },
      handle: (req, res) => handler.answer(req, res, req.id),
    });
  // GET keeps the plain operation ids that came first (authorizeRequest, authorizeEnvoyRequest).
  const by = (method: Method) => (method === "get" ? "" : `By${method[0]!.toUpperCase()}${method.slice(1)}`);
  return METHODS.flatMap((method) => [
    described(method, "/auth", `authorizeRequest${by(method)}`),
    described(method, "/auth/:path", `authorizeEnvoyRequest${by(method)}`),
  ]);
}
