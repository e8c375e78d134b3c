import type { RequestListener } from "node:http";
import { restrictedMessage, verify } from "../../services/verification/authenticate.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { after, runNowOrLater } from "../../services/maybe.ts";
import type { StoredKey } from "../../domain/model.ts";
import { hasBody } from "../body.ts";
import { answerError, BEARER_CHALLENGE, sendError, sendUnauthorized } from "../errors.ts";
import { callerKeyJson } from "../keys/present.ts";
import type { TrustedProxies } from "./client-address.ts";
import { keyPathRequest } from "./key-path-request.ts";
import { jsonText, sendJsonText, type JsonText } from "./json-text.ts";
import { echoRequestId, logWhenAnswered, requestId, type Answering } from "../request-log.ts";

// GET /keys/self is how clients check a key, and checking keys is what keyplane does most: it is
// answered here, before express, from the verification cache (see docs/adr/0004). Everything else,
// and any /keys/self request that is not a plain GET, goes on to `next`. The express route of the same
// path stays: it describes the operation in /openapi.json and answers the other methods.
const SELF = /^\/(api)?keys\/self\/?(\?|$)/;

export function withSelfFastPath(ctx: VerificationNeeds, trusted: TrustedProxies, next: RequestListener): RequestListener {
  // The answer of each cached key, serialised once: the verification cache hands out the same object
  // until the key changes, and a changed key is a new object, so a stale body cannot be served.
  const bodies = new WeakMap<StoredKey, JsonText>();
  return (req, res) => {
    if (req.method !== "GET" || !SELF.test(req.url ?? "") || hasBody(req)) return next(req, res);
    const reqId = requestId(req);
    const answering: Answering = { route: "/keys/self" };
    logWhenAnswered(ctx, req, res, reqId, answering);
    runNowOrLater(
      () =>
        after(verify(ctx, req.headers.authorization, keyPathRequest(req, trusted)), (principal) => {
          if ("refused" in principal) return sendUnauthorized(res, BEARER_CHALLENGE, principal.refused, reqId);
          if ("restricted" in principal) return sendError(echoRequestId(res, reqId), "forbidden", restrictedMessage(principal.restricted));
          answering.key = principal.key.id;
          let body = bodies.get(principal.key);
          if (!body) bodies.set(principal.key, (body = jsonText(callerKeyJson(principal))));
          sendJsonText(res, body, reqId);
        }),
      (error) => answerError(echoRequestId(res, reqId), error, ctx.log, reqId),
    );
  };
}
