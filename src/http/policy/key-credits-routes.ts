import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { keyCredits, setKeyCredits } from "../../services/policy/policies.ts";
import { keyAuthor } from "../author.ts";
import { creditsChange } from "./credits-change.ts";
import { authorizedScope, keyRef } from "../keys/key-scope.ts";
import { route, type Route } from "../route.ts";
import { creditsBody, creditsObject } from "../schemas.ts";

// A key's own balance (docs/api.md, "Key policy"), under `{base}/{key-id}/credits`: read by whoever
// may get the key, set or added to by whoever may PUT it, except the key itself.

const NO_CREDITS = "; 404 also when the key's own policy has no credits";

export function keyCreditsRoutes(ctx: PolicyNeeds & KeysNeeds & Pick<VerificationNeeds, "pathScopes">, one: string, noun: string, tag: string): Route[] {
  const path = `${one}/credits`;
  return [
    route({
      method: "get", path, operationId: `get${noun}KeyCredits`, tag, auth: "key", refusals: ["not_found"],
      summary: `A key's own balance and next refill${NO_CREDITS}`,
      ok: { status: 200, description: "The balance", schema: creditsObject },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        res.json(await keyCredits(ctx, scope, keyRef(req)));
      },
    }),
    route({
      method: "put", path, operationId: `set${noun}KeyCredits`, tag, auth: "key", body: creditsBody, refusals: ["forbidden", "not_found"],
      summary: `Set a key's own balance, or add to it (never below 0); never the calling key's own (403)${NO_CREDITS}`,
      ok: { status: 200, description: "The balance", schema: creditsObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        res.json(await setKeyCredits(ctx, scope, keyRef(req), creditsChange(body), keyAuthor(req)));
      },
    }),
  ];
}
