import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { findKey, keyNotFound } from "../../services/keys/keys.ts";
import { keyUsage } from "../../services/policy/key-usage.ts";
import { authorizedScope, keyRef } from "../keys/key-scope.ts";
import { route, type Route } from "../route.ts";
import { usageObject } from "./usage-schema.ts";

// What a key has used of the limits and credits that bind it, at every level (docs/api.md, "Key
// policy"), under `{base}/{key-id}/usage`: read by whoever may get the key, charging nothing.

export function keyUsageRoutes(ctx: PolicyNeeds & KeysNeeds & Pick<VerificationNeeds, "pathScopes">, one: string, noun: string, tag: string): Route[] {
  return [
    route({
      method: "get", path: `${one}/usage`, operationId: `get${noun}KeyUsage`, tag, auth: "key", refusals: ["not_found"],
      summary: "What a key has used of every rate limit and the nearest credits that bind it, from its own policy up to its customer's",
      ok: { status: 200, description: "Each limit's window and what is left of it; the nearest balance and its next refill", schema: usageObject },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        const key = await findKey(ctx, scope, keyRef(req));
        if (!key) throw keyNotFound();
        res.json(await keyUsage(ctx, key));
      },
    }),
  ];
}
