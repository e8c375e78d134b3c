import type { Context } from "../services/context.ts";
import { deleteKey, getKey, listKeys, provisionKey, updateKey } from "../services/keys.ts";
import { keyAuthor } from "./author.ts";
import { eventsRoute, keyLifecycleRoutes, rotateSelfRoute } from "./key-lifecycle-routes.ts";
import { sendKeyList } from "./key-list.ts";
import { authorizedScope, keyRef } from "./key-scope.ts";
import { callerKeyJson, keyJson } from "./present.ts";
import { route, type Route } from "./route.ts";
import { keyObject, listQuery, provisionBody, updateBody } from "./schemas.ts";

// Every key path (docs/api.md, "Keys"): one set of operations on each base, under each spelling.
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

/** The operations of one base, declared on its canonical spelling. */
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
        const key = await getKey(ctx, scope, keyRef(req));
        res.json(keyJson(key));
      },
    }),
    route({
      method: "put", path: one, operationId: `update${noun}Key`, tag, auth: "key", body: updateBody, refusals: ["not_found", "conflict"],
      summary: "Rename, enable or disable a key, or set or remove its expiry",
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
  ];
}

export function keysRoutes(ctx: Context): Route[] {
  const self = route({
    method: "get", path: "/keys/self", operationId: "getSelfKey", tag: "keys", auth: "key",
    summary: "The calling key",
    ok: { status: 200, description: "The calling key", schema: keyObject },
    handle: (req, res) => void res.json(callerKeyJson(req.principal!)),
  });
  // The literal self paths come before /keys/{keyId}/..., which would serve them too (keyRef reads
  // `self` as the calling key) but by a look-up: GET /keys/self answers from the principal itself.
  const canonical = [self, rotateSelfRoute(ctx), ...BASES.flatMap(({ path, tag }) => keyRoutes(ctx, path, tag))];
  // Every spelling is served; the document describes the canonical one and refers the others to it.
  const spelled = canonical.flatMap((r) => spellings(r.path).map((path) => (path === r.path ? r : { ...r, path, aliasOf: r.path })));
  return [...spelled, eventsRoute(ctx)];
}
