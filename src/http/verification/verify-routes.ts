// verification/ of http/: POST /verify, /auth and its gateways, GET /keys/self's fast path, and the
// client's address. It may use domain/, http/'s top files, services/ (verification, policy) and http/keys/.

import type { RequestListener } from "node:http";
import type { StoredKey } from "../../domain/model.ts";
import { parseAddress } from "../../domain/policy/restrictions/cidr.ts";
import { COST } from "../../domain/policy/policy.ts";
import { isText } from "../../domain/text.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { after, runNowOrLater, type Maybe } from "../../services/maybe.ts";
import { verifyRequest, type Verdict } from "../../services/verification/verify.ts";
import { BODY_LIMIT } from "../body.ts";
import { clientAddress, type TrustedProxies } from "./client-address.ts";
import { answerError, sendError } from "../errors.ts";
import { verifiedKeyJson } from "../keys/present.ts";
import { jsonText, sendJsonText, type JsonText } from "./json-text.ts";
import { echoRequestId, logWhenAnswered, requestId, type Answering } from "../request-log.ts";
import { parse, route, type Route } from "../route.ts";
import { VERIFY_IP_MAX, VERIFY_REFERRER_MAX, verdictObject, verifyBody } from "../schemas.ts";

// POST /verify: a verdict for a platform service on a token it was given (docs/api.md, "Verification").
// The token travels in the body; the answer is 200 whatever the token, with the verdict's code.
export function verifyRoutes(ctx: VerificationNeeds, trusted: TrustedProxies): Route[] {
  return [
    route({
      method: "post", path: "/verify", operationId: "verifyKey", tag: "verification", auth: "none", body: verifyBody,
      refusals: ["rate_limited", "unavailable"],
      summary: "May this token do this method on this platform path? A verdict, whatever the token",
      ok: { status: 200, description: "The verdict; the key (without its keyId) when it is usable", schema: verdictObject },
      handle: async (req, res, { body }) => {
        res.type("application/json; charset=utf-8").send((await verdictText(ctx, clientAddress(req, trusted), body)).text);
      },
    }),
  ];
}

type VerifyBody = ReturnType<typeof verifyBody.parse>;

function verdictText(ctx: VerificationNeeds, client: string, body: VerifyBody): Maybe<JsonText> {
  const request = { endpoint: "verify", client, token: body.key, method: body.method ?? "GET", path: body.path, ip: body.ip, referrer: body.referrer, cost: body.cost ?? COST.default } as const;
  return after(verifyRequest(ctx, request), verdictJson);
}

// A verdict's text is worked out once per key and code: platform services ask about the same keys over
// and over, and serialising the key is most of an answer's cost. The verification cache hands out the
// same key object until the key changes, and a changed key is a new object (as for GET /keys/self).
const keyVerdicts = new WeakMap<StoredKey, Partial<Record<Verdict["code"], JsonText>>>();
const keylessVerdicts = new Map<Verdict["code"], JsonText>();

function verdictJson(v: Verdict): JsonText {
  if ("key" in v && (v.policy !== undefined || v.reason !== undefined)) return policyVerdictJson(v);
  const texts = "key" in v ? keyVerdicts.get(v.key) ?? {} : undefined;
  let json = texts ? texts[v.code] : keylessVerdicts.get(v.code);
  if (json === undefined) {
    json = jsonText({ valid: v.code === "VALID", code: v.code, ...("key" in v && { key: verifiedKeyJson(v.key, v.level) }) });
    if ("key" in v && texts) keyVerdicts.set(v.key, { ...texts, [v.code]: json });
    else keylessVerdicts.set(v.code, json);
  }
  return json;
}

/** A key's part of a verdict, serialised once per key object, as above. */
const keyTexts = new WeakMap<StoredKey, string>();

/**
 * The verdict of a key a policy binds: its figures change with every request, so only the key's part
 * of the text is kept.
 */
function policyVerdictJson(v: Extract<Verdict, { key: StoredKey }>): JsonText {
  let key = keyTexts.get(v.key);
  if (key === undefined) keyTexts.set(v.key, (key = JSON.stringify(verifiedKeyJson(v.key, v.level))));
  const { ratelimits, credits } = v.policy ?? {};
  const head = JSON.stringify({ valid: v.code === "VALID", code: v.code, ...(v.reason && { reason: v.reason }) });
  const tail = ratelimits === undefined && credits === undefined ? "" : "," + JSON.stringify({ ratelimits, credits }).slice(1, -1);
  const text = `${head.slice(0, -1)},"key":${key}${tail}}`;
  return { text, length: Buffer.byteLength(text) };
}

/**
 * POST /verify is what platform services call on every request they serve: its plain form (a JSON
 * body in UTF-8 of a declared length within the limit, no encoding, no expectation) is answered here,
 * before express, as GET /keys/self is. Every other form goes on to `next`, the express route of the
 * same path, which answers it the same way.
 */
export function withVerifyFastPath(ctx: VerificationNeeds, trusted: TrustedProxies, next: RequestListener): RequestListener {
  return (req, res) => {
    const h = req.headers;
    const length = Number(h["content-length"]);
    const plain = req.method === "POST" && isVerifyUrl(req.url) && isPlainJson(h["content-type"]) &&
      length > 0 && length <= BODY_LIMIT && h["transfer-encoding"] === undefined && h["content-encoding"] === undefined && h.expect === undefined;
    if (!plain) return next(req, res);
    const reqId = requestId(req);
    const answering: Answering = { route: "/verify" };
    logWhenAnswered(ctx, req, res, reqId, answering);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    // Answered at the stream's 'end': answering on the last 'data' left Node more work once the
    // answer was written, the request being still open then. A stream ends once: a plain listener
    // spares the wrapper once() adds.
    req.on("end", () => {
      let input: unknown;
      try {
        input = JSON.parse((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString("utf8"));
      } catch {
        return sendError(echoRequestId(res, reqId), "bad_request", "The request body is not valid JSON.");
      }
      runNowOrLater(
        () => after(verdictText(ctx, clientAddress(req, trusted), plainVerifyBody(input) ?? parse(verifyBody, input, "request body")), (json) => sendJsonText(res, json, reqId)),
        (error) => answerError(echoRequestId(res, reqId), error, ctx.log, reqId),
      );
    });
  };
}

// The forms platform services send are told by comparing strings; the patterns catch the rest.
const VERIFY = /^\/verify\/?(\?|$)/;
const PLAIN_JSON = /^application\/json\s*(;\s*charset=("?)utf-8\2\s*)?$/i;

function isVerifyUrl(url = ""): boolean {
  return url === "/verify" || VERIFY.test(url);
}

function isPlainJson(type = ""): boolean {
  return type === "application/json" || PLAIN_JSON.test(type);
}

const METHOD = /^[A-Za-z]{1,16}$/;

/**
 * The body as verifyBody parses it, when it is of the plain form platform services send (a key, a path,
 * a method, and for keys with a policy an ip, a referrer and a cost, nothing else), checked by hand:
 * zod's parse costs a tenth of the answer. Anything else is left to verifyBody, which says what is
 * wrong with it.
 */
export function plainVerifyBody(input: unknown): VerifyBody | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined;
  let plain = true;
  for (const name in input) if (name !== "key" && name !== "path" && name !== "method") plain = false;
  const { key, path, method } = input as Record<string, unknown>;
  if (typeof key !== "string" || key.length > 256 || !isText(key)) return undefined;
  if (path !== undefined && (typeof path !== "string" || path.length > 4096 || !path.startsWith("/") || !isText(path))) return undefined;
  if (method !== undefined && (typeof method !== "string" || !METHOD.test(method))) return undefined;
  const body: VerifyBody = { key, path, method: method?.toUpperCase() };
  return plain ? body : withPolicyFields(body, input as Record<string, unknown>);
}

/** `ip`, `referrer` and `cost` checked by hand as verifyBody checks them; undefined for anything else. */
function withPolicyFields(body: VerifyBody, fields: Record<string, unknown>): VerifyBody | undefined {
  for (const name in fields) if (name !== "key" && name !== "path" && name !== "method" && name !== "ip" && name !== "referrer" && name !== "cost") return undefined;
  const { ip, referrer, cost } = fields;
  if (ip !== undefined && (typeof ip !== "string" || ip.length > VERIFY_IP_MAX || parseAddress(ip) === undefined)) return undefined;
  if (referrer !== undefined && (typeof referrer !== "string" || referrer.length > VERIFY_REFERRER_MAX || !isText(referrer))) return undefined;
  if (cost !== undefined && (typeof cost !== "number" || !Number.isInteger(cost) || cost < COST.min || cost > COST.max)) return undefined;
  return { ...body, ip: ip as string | undefined, referrer: referrer as string | undefined, cost: cost as number | undefined };
}
