// policy/ of http/: policies of keys and entities, credits and usage, and their schemas. It may use
// domain/, http/'s top files, services/ (policy, keys, verification) and http/keys/.

import type { Request, Response } from "express";
import { forbidden } from "../../domain/errors.ts";
import { sameScope } from "../../domain/scope/scope.ts";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { entityAt, entityCredits, entityPolicy, setEntityCredits, setEntityPolicy, type PolicedLevel } from "../../services/policy/policies.ts";
import { BASES, nounOf } from "../keys/key-bases.ts";
import { authorizedScope, refuseRestricted } from "../keys/key-scope.ts";
import { creditsChange } from "./credits-change.ts";
import { route, type Route } from "../route.ts";
import { creditsBody, creditsObject, policyBody } from "../schemas.ts";

// Entities' policies and balances on the key paths' scope grammar (docs/api.md, "Key policy"):
// `{scope path}/policy` and `{scope path}/credits`, beside `{scope path}/keys`. Any key that may use the
// path reads them; only a key whose scope strictly contains the entity sets them, so no key loosens
// the limits that bind it, and a customer's are the admin's alone. A restricted key (docs/api.md,
// "Restricted keys") neither reads nor sets them: 403.

/** The scope paths: each key base without its `/keys`. */
const SCOPE_PATHS = BASES.filter((b) => b.path !== "/keys").map((b) => ({ path: b.path.replace(/\/keys$/, ""), tag: b.tag }));

type EntityAt = Awaited<ReturnType<typeof entityAt>>;

/**
 * A handler: load and authorize the entity the path ends at (for a change, refused unless the caller is
 * above it), then answer with what `act` makes of it.
 */
function answer<B>(ctx: PolicyNeeds & VerificationNeeds, change: boolean, act: (at: EntityAt, body: B) => Promise<unknown>) {
  return async (req: Request, res: Response, { body }: { body: B }) => {
    const target = await authorizedScope(ctx, req);
    refuseRestricted(req, "entities' policies and credits");
    const at = await entityAt(ctx, target);
    if (change && sameScope(req.principal!.scope, target)) throw refusal(at.level);
    res.json(await act(at, body));
  };
}

function refusal(level: PolicedLevel) {
  return forbidden(level === "customer"
    ? "A customer's policy and credits are set through the admin API."
    : `A key may not set the policy or credits of its own ${level}: a key above it may.`);
}

const STRICTLY = "by a key whose scope strictly contains the entity (403 for one at the entity's own level, and for a restricted key)";

export function scopePolicyRoutes(ctx: PolicyNeeds & VerificationNeeds): Route[] {
  return SCOPE_PATHS.flatMap(({ path, tag }) => {
    const noun = nounOf(`${path}/`);
    return [
      route({
        method: "get", path: `${path}/policy`, operationId: `get${noun}Policy`, tag, auth: "key", refusals: ["forbidden", "not_found"],
        summary: "The entity's policy, its credits at the live balance; null for none",
        ok: { status: 200, description: "The policy, or null", schema: policyBody },
        handle: answer(ctx, false, ({ level, entity }) => entityPolicy(ctx, level, entity)),
      }),
      route({
        method: "put", path: `${path}/policy`, operationId: `set${noun}Policy`, tag, auth: "key", body: policyBody, bodyRequired: true, refusals: ["forbidden", "not_found"],
        summary: `Replace the entity's policy (null removes it), ${STRICTLY}`,
        ok: { status: 200, description: "The policy, or null", schema: policyBody },
        handle: answer(ctx, true, ({ level, entity }, body) => setEntityPolicy(ctx, level, entity.id, body)),
      }),
      route({
        method: "get", path: `${path}/credits`, operationId: `get${noun}Credits`, tag, auth: "key", refusals: ["forbidden", "not_found"],
        summary: "The entity's balance and next refill; 404 when its policy has no credits",
        ok: { status: 200, description: "The balance", schema: creditsObject },
        handle: answer(ctx, false, ({ level, entity }) => entityCredits(ctx, level, entity)),
      }),
      route({
        method: "put", path: `${path}/credits`, operationId: `set${noun}Credits`, tag, auth: "key", body: creditsBody, refusals: ["forbidden", "not_found"],
        summary: `Set the entity's balance, or add to it (never below 0), ${STRICTLY}; 404 when its policy has no credits`,
        ok: { status: 200, description: "The balance", schema: creditsObject },
        handle: answer(ctx, true, ({ level, entity }, body) => setEntityCredits(ctx, level, entity.id, creditsChange(body))),
      }),
    ];
  });
}

