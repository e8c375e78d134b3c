import type { Context } from "../services/context.ts";
import { verifyRequest } from "../services/verify.ts";
import { verifiedKeyJson } from "./present.ts";
import { route, type Route } from "./route.ts";
import { verdictObject, verifyBody } from "./schemas.ts";
import { clientAddress, type TrustedProxies } from "./client-address.ts";

// POST /verify: a verdict for a platform service on a token it was given (docs/api.md, "Verification").
// The token travels in the body; the answer is 200 whatever the token, with the verdict's code.
export function verifyRoutes(ctx: Context, trusted: TrustedProxies): Route[] {
  return [
    route({
      method: "post", path: "/verify", operationId: "verifyKey", tag: "verification", auth: "none", body: verifyBody,
      refusals: ["rate_limited", "unavailable"],
      summary: "May this token do this method on this platform path? A verdict, whatever the token",
      ok: { status: 200, description: "The verdict; the key (without its keyId) when it is usable", schema: verdictObject },
      handle: async (req, res, { body }) => {
        const client = clientAddress(req, trusted);
        const verdict = await verifyRequest(ctx, { endpoint: "verify", client, token: body.key, method: body.method ?? "GET", path: body.path });
        res.json({
          valid: verdict.code === "VALID",
          code: verdict.code,
          ...("key" in verdict && { key: verifiedKeyJson(verdict.key, verdict.level) }),
        });
      },
    }),
  ];
}
