import type { Request } from "express";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import { entityCredits, entityPolicy, setEntityCredits, setEntityPolicy, type Policed, type PolicedLevel } from "../../services/policy/policies.ts";
import { creditsChange } from "./credits-change.ts";
import { route, type Route } from "../route.ts";
import { creditsBody, creditsObject, policyBody } from "../schemas.ts";

// The directory's policies and balances through the admin API (docs/api.md, "Key policy"): the only
// way to a customer's, and a way to every entity's. Unknown entities are 404, as elsewhere in /admin.

/** An entity of the admin API's paths: where its path ends, and how to load it. */
export interface PolicedPath {
  path: string;
  level: PolicedLevel;
  noun: string;
  load: (req: Request) => Promise<Policed>;
}

const tag = "admin";

export function adminPolicyRoutes(ctx: PolicyNeeds, entities: PolicedPath[]): Route[] {
  return entities.flatMap(({ path, level, noun, load }) => [
    route({
      method: "get", path: `${path}/policy`, operationId: `adminGet${noun}Policy`, tag, auth: "admin", refusals: ["not_found"],
      summary: `The ${level}'s policy, its credits at the live balance; null for none`,
      ok: { status: 200, description: "The policy, or null", schema: policyBody },
      handle: async (req, res) => void res.json(await entityPolicy(ctx, level, await load(req))),
    }),
    route({
      method: "put", path: `${path}/policy`, operationId: `adminSet${noun}Policy`, tag, auth: "admin", body: policyBody, bodyRequired: true, refusals: ["not_found"],
      summary: `Replace the ${level}'s policy (null removes it); it binds every key inside the ${level}`,
      ok: { status: 200, description: "The policy, or null", schema: policyBody },
      handle: async (req, res, { body }) => void res.json(await setEntityPolicy(ctx, level, (await load(req)).id, body)),
    }),
    route({
      method: "get", path: `${path}/credits`, operationId: `adminGet${noun}Credits`, tag, auth: "admin", refusals: ["not_found"],
      summary: `The ${level}'s balance and next refill; 404 when its policy has no credits`,
      ok: { status: 200, description: "The balance", schema: creditsObject },
      handle: async (req, res) => void res.json(await entityCredits(ctx, level, await load(req))),
    }),
    route({
      method: "put", path: `${path}/credits`, operationId: `adminSet${noun}Credits`, tag, auth: "admin", body: creditsBody, refusals: ["not_found"],
      summary: `Set the ${level}'s balance, or add to it (never below 0); 404 when its policy has no credits`,
      ok: { status: 200, description: "The balance", schema: creditsObject },
      handle: async (req, res, { body }) => void res.json(await setEntityCredits(ctx, level, (await load(req)).id, creditsChange(body))),
    }),
  ]);
}
