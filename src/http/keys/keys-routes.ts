// keys/ of http/: the key paths under each base and spelling, their lifecycle routes, listing and how keys
// are shown. It may use domain/, http/'s top files, services/ (keys, policy, verification) and http/policy/.

import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { deleteKey, getKey, keyShown, listKeys, provisionKey, updateKey } from "../../services/keys/keys.ts";
import { keyAuthor } from "../author.ts";
import { eventsRoute, keyLifecycleRoutes, rotateSelfRoute } from "./key-lifecycle-routes.ts";
import { keyCreditsRoutes } from "../policy/key-credits-routes.ts";
import { keyUsageRoutes } from "../policy/key-usage-routes.ts";
import { sendKeyList } from "./key-list.ts";
import { authorizedScope, keyRef } from "./key-scope.ts";
import { callerKey, keyJson } from "./present.ts";
import { route, type Route } from "../route.ts";
import { scopePolicyRoutes } from "../policy/scope-policy-routes.ts";
import { aliases, BASES, nounOf } from "./key-bases.ts";
import { keyObject, listQuery, provisionBody, updateBody } from "../schemas.ts";


/** The operations of one base, declared on its canonical spelling. */
function keyRoutes(ctx: KeysNeeds & PolicyNeeds & VerificationNeeds, base: string, tag: string): Route[] {
  const one = `${base}/:keyId`;
  const noun = nounOf(base);
  return [
    route({
      method: "get", path: base, operationId: `list${noun}Keys`, tag, auth: "key", query: listQuery,
      summary: "List the live keys of the scope, ordered by id",
      ok: { status: 200, description: "A JSON array of keys", schema: keyObject.array(), headers: ["Link"] },
      handle: async (req, res, { query }) => {
        const scope = await authorizedScope(ctx, req);
        const { limit, after, ...filter } = query;
        await sendKeyList(req, res, (n) => listKeys(ctx, scope, { filter, after, limit: n ?? limit }), limit);
      },
    }),
    route({
      method: "post", path: base, operationId: `provision${noun}Key`, tag, auth: "key", body: provisionBody, refusals: ["conflict"],
      summary: "Provision a key at the scope; an existing live key of the same name is returned instead (409 to a restricted key for a name held by a key it does not reach)",
      ok: { status: 200, description: "The key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        const { key } = await provisionKey(ctx, scope, body, keyAuthor(req));
        res.json(keyJson(key));
      },
    }),
    route({
      method: "get", path: one, operationId: `get${noun}Key`, tag, auth: "key", refusals: ["not_found"],
      summary: "Get one key, by keyId or numeric id",
      ok: { status: 200, description: "The key", schema: keyObject },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        const key = await getKey(ctx, scope, keyRef(req), req.principal!.key);
        res.json(keyJson(key));
      },
    }),
    route({
      method: "put", path: one, operationId: `update${noun}Key`, tag, auth: "key", body: updateBody, refusals: ["forbidden", "not_found", "conflict"],
      summary: "Rename, enable or disable a key, set or remove its expiry, or set or remove its own policy",
      ok: { status: 200, description: "The updated key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        const key = await updateKey(ctx, scope, keyRef(req), body, keyAuthor(req));
        res.json(keyJson(key));
      },
    }),
    route({
      method: "delete", path: one, operationId: `delete${noun}Key`, tag, auth: "key",
      summary: "Delete a key (204 also when there is no such key here)",
      ok: { status: 204, description: "Deleted, or nothing to delete" },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        await deleteKey(ctx, scope, keyRef(req), keyAuthor(req));
        res.status(204).end();
      },
    }),
    ...keyLifecycleRoutes(ctx, base, noun, tag),
    ...keyCreditsRoutes(ctx, one, noun, tag),
    ...keyUsageRoutes(ctx, one, noun, tag),
  ];
}

export function keysRoutes(ctx: KeysNeeds & PolicyNeeds & VerificationNeeds): Route[] {
  const self = route({
    method: "get", path: "/keys/self", operationId: "getSelfKey", tag: "keys", auth: "key",
    summary: "The calling key",
    ok: { status: 200, description: "The calling key", schema: keyObject },
    // Its policies' credits are read live: the principal's came with it from the key cache.
    handle: async (req, res) => void res.json(keyJson(await keyShown(ctx, callerKey(req.principal!)))),
  });
  // The literal self paths come before /keys/{keyId}/..., which would serve them too (keyRef reads
  // `self` as the calling key) but by a look-up: GET /keys/self answers from the principal itself.
  const bases = BASES.flatMap(({ path, tag }) => keyRoutes(ctx, path, tag));
  const canonical = [self, ...selfChanges(bases), rotateSelfRoute(ctx), ...bases];
  // Every spelling is served; the document describes the canonical one and refers the others to it.
  const spelled = canonical.flatMap(aliases);
  return [...spelled, ...scopePolicyRoutes(ctx).flatMap(aliases), eventsRoute(ctx)];
}

/**
 * PUT and DELETE on the literal /keys/self: what /keys/{keyId} answers for `self`, by the same
 * handlers, declared on the literal path too so that /openapi.json lists them and a 405 there names
 * every method that works (Allow: GET, PUT, DELETE).
 */
function selfChanges(routes: Route[]): Route[] {
  return routes.filter((r) => r.path === "/keys/:keyId" && (r.method === "put" || r.method === "delete")).map((r) => ({
    ...r,
    path: "/keys/self",
    operationId: `${r.method === "put" ? "update" : "delete"}SelfKey`,
    summary: `${r.summary} (the calling key)`,
    handle: (req, res, input) => {
      req.params.keyId = "self";
      return r.handle(req, res, input);
    },
  }));
}
