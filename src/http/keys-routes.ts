import type { Request } from "express";
import { unauthorized } from "../domain/errors.ts";
import { mayReach } from "../domain/access.ts";
import type { Scope, ScopeRefs } from "../domain/scope.ts";
import type { Context } from "../services/context.ts";
import { deleteKey, getKey, listKeys, provisionKey, updateKey } from "../services/keys.ts";
import { resolvePathScope } from "../services/path-scope.ts";
import { sendKeyList } from "./key-list.ts";
import { callerKeyJson, keyJson } from "./present.ts";
import { route, type Route } from "./route.ts";
import { keyObject, listQuery, provisionBody, updateBody } from "./schemas.ts";

// Every key path (docs/api.md, "Keys"): one set of five operations on each base, under each spelling.
const BASES: { path: string; tag: string }[] = [
  { path: "/keys", tag: "keys" },
  { path: "/customers/:customer/keys", tag: "customer keys" },
  { path: "/customers/:customer/domains/:domain/keys", tag: "customer keys" },
  { path: "/customers/:customer/domains/:domain/applications/:application/keys", tag: "customer keys" },
  { path: "/customers/:customer/domains/:domain/subscribers/:subscriber/keys", tag: "customer keys" },
  { path: "/domains/:domain/keys", tag: "domain keys" },
  { path: "/domains/:domain/applications/:application/keys", tag: "domain keys" },
  { path: "/domains/:domain/subscribers/:subscriber/keys", tag: "domain keys" },
  { path: "/applications/:application/keys", tag: "application keys" },
  { path: "/subscribers/:subscriber/keys", tag: "subscriber keys" },
];

/** The scope a base names, for its operations' ids: /customers/:customer/domains/:domain/keys -> CustomerDomain. */
function nounOf(base: string): string {
  return [...base.matchAll(/\/(customers|domains|applications|subscribers)\//g)].map(([, c]) => c![0]!.toUpperCase() + c!.slice(1, -1)).join("");
}

/** The spellings clients of the original platform use: `apikeys` for `keys`, `tenants` for `customers`. */
export function spellings(path: string): string[] {
  const keys = [path, path.replace(/\/keys(?=\/|$)/, "/apikeys")];
  return path.startsWith("/customers/") ? [...keys, ...keys.map((p) => p.replace(/^\/customers\//, "/tenants/"))] : keys;
}

/**
 * Load and authorize: the scope a request works in, its path's target, once the caller is known to
 * reach the path's gate. Anything else, an unknown entity in the path included, is 401. (Every handler
 * here reads: authenticate and validate (route.ts), load and authorize (this), act (a service, which
 * sees only keys inside the scope), respond.)
 */
async function authorizedScope(ctx: Context, req: Request): Promise<Scope> {
  const caller = req.principal!.scope;
  if (!("customer" in req.params || "domain" in req.params || "application" in req.params || "subscriber" in req.params)) {
    return caller;
  }
  const resolved = await resolvePathScope(ctx, req.params as ScopeRefs, caller);
  // The level rules every platform path follows (domain/access.ts); a key path never ends at an application.
  if (!resolved || !mayReach(caller, resolved, req.method, false)) throw unauthorized("This key may not manage keys here.");
  return resolved.target;
}

const keyRef = (req: Request) => String(req.params.keyId);

/** The five operations of one base, declared on its canonical spelling. */
function keyRoutes(ctx: Context, base: string, tag: string): Route[] {
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
      method: "post", path: base, operationId: `provision${noun}Key`, tag, auth: "key", body: provisionBody,
      summary: "Provision a key at the scope; an existing live key of the same name is returned instead",
      ok: { status: 200, description: "The key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        const { key } = await provisionKey(ctx, scope, body);
        res.json(keyJson(key));
      },
    }),
    route({
      method: "get", path: one, operationId: `get${noun}Key`, tag, auth: "key", refusals: ["not_found"],
      summary: "Get one key, by keyId or numeric id",
      ok: { status: 200, description: "The key", schema: keyObject },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        const key = await getKey(ctx, scope, keyRef(req));
        res.json(keyJson(key));
      },
    }),
    route({
      method: "put", path: one, operationId: `update${noun}Key`, tag, auth: "key", body: updateBody, refusals: ["not_found", "conflict"],
      summary: "Rename, enable or disable a key",
      ok: { status: 200, description: "The updated key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        const key = await updateKey(ctx, scope, keyRef(req), body);
        res.json(keyJson(key));
      },
    }),
    route({
      method: "delete", path: one, operationId: `delete${noun}Key`, tag, auth: "key",
      summary: "Delete a key (204 also when there is no such key here)",
      ok: { status: 204, description: "Deleted, or nothing to delete" },
      handle: async (req, res) => {
        const scope = await authorizedScope(ctx, req);
        await deleteKey(ctx, scope, keyRef(req));
        res.status(204).end();
      },
    }),
  ];
}

export function keysRoutes(ctx: Context): Route[] {
  const self = route({
    method: "get", path: "/keys/self", operationId: "getSelfKey", tag: "keys", auth: "key",
    summary: "The calling key",
    ok: { status: 200, description: "The calling key", schema: keyObject },
    handle: (req, res) => void res.json(callerKeyJson(req.principal!)),
  });
  const canonical = [self, ...BASES.flatMap(({ path, tag }) => keyRoutes(ctx, path, tag))];
  // Every spelling is served; the document describes the canonical one and refers the others to it.
  return canonical.flatMap((r) => spellings(r.path).map((path) => (path === r.path ? r : { ...r, path, aliasOf: r.path })));
}
