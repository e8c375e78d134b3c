// analytics/ of http/: the analytics endpoints (docs/api.md, "Analytics"): a key's history on every key
// base, its caller's scope at /analytics, the platform's at /admin/analytics. It may use domain/, http/'s
// top files, services/ (analytics, keys, directory, verification's needs) and http/keys/ (bases, scope).

import type { Request } from "express";
import { badRequest } from "../../domain/errors.ts";
import type { Bucket } from "../../domain/analytics/usage.ts";
import { getCustomer, getDomain } from "../../services/directory/directory.ts";
import type { DirectoryNeeds } from "../../services/directory/needs.ts";
import { findKey, keyNotFound } from "../../services/keys/keys.ts";
import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { keyAnalytics, scopeAnalytics, type AnalyticsNeedsToRead, type KeyAnalytics } from "../../services/analytics/usage-reads.ts";
import { aliases, BASES, nounOf } from "../keys/key-bases.ts";
import { authorizedScope, callerReach, keyRef } from "../keys/key-scope.ts";
import { route, type Route } from "../route.ts";
import { adminAnalyticsQuery, analyticsObject, analyticsQuery, scopeAnalyticsObject, scopeAnalyticsQuery } from "./analytics-schema.ts";

/** What the routes load with besides the analytics room's reads: a key found as the key paths find it, the admin's narrowing named. */
type RoutesNeeds = KeysNeeds & DirectoryNeeds & Pick<VerificationNeeds, "db" | "pathScopes">;

const bucketJson = (b: Bucket) => ({ ...b, start: b.start.toISOString() });
const rangeJson = (a: KeyAnalytics) => ({ interval: a.interval, from: a.from.toISOString(), to: a.to.toISOString(), buckets: a.buckets.map(bucketJson) });

export function analyticsRoutes(ctx: RoutesNeeds, needs: AnalyticsNeedsToRead): Route[] {
  return [
    ...BASES.flatMap(({ path, tag }) => aliases(keyAnalyticsRoute(ctx, needs, path, tag))),
    route({
      method: "get", path: "/analytics", operationId: "getAnalytics", tag: "analytics", auth: "key", query: scopeAnalyticsQuery,
      summary: "Verdicts by outcome over time, summed over every key the caller may manage (a restricted key: itself and its descendants), and its most used keys",
      ok: { status: 200, description: "The buckets of the range and the top keys", schema: scopeAnalyticsObject },
      handle: async (req, res, { query }) => {
        const { caller, ...scope } = callerReach(req);
        const answer = await scopeAnalytics(needs, { scope, within: caller?.restricted ? caller.lineage : undefined }, query);
        res.json({ ...rangeJson(answer), top: answer.top });
      },
    }),
    route({
      method: "get", path: "/admin/analytics", operationId: "getAdminAnalytics", tag: "admin", auth: "admin", query: adminAnalyticsQuery, refusals: ["not_found"],
      summary: "Verdicts by outcome over time, summed over every key (or a customer's, or a domain's), and the most used keys",
      ok: { status: 200, description: "The buckets of the range and the top keys", schema: scopeAnalyticsObject },
      handle: async (req, res, { query }) => {
        const { customer, domain, ...range } = query;
        if (domain !== undefined && customer === undefined) throw badRequest("domain narrows a customer: give customer too.");
        const c = customer === undefined ? undefined : await getCustomer(ctx, customer);
        const d = c && domain !== undefined ? await getDomain(ctx, c, domain) : undefined;
        const scope = c ? { tenantId: c.id, domainId: d?.id ?? null, applicationId: null, subscriberId: null } : null;
        const answer = await scopeAnalytics(needs, { scope }, range);
        res.json({ ...rangeJson(answer), top: answer.top });
      },
    }),
  ];
}

/** GET {base}/{key-id}/analytics: whoever may get the key reads its history; a deleted key's is 404, as the key is. */
function keyAnalyticsRoute(ctx: RoutesNeeds, needs: AnalyticsNeedsToRead, base: string, tag: string): Route {
  return route({
    method: "get", path: `${base}/:keyId/analytics`, operationId: `get${nounOf(base)}KeyAnalytics`, tag, auth: "key", query: analyticsQuery, refusals: ["not_found"],
    summary: "A key's verdicts by outcome over time, and the credits they spent; a rotated key's history goes on under its new key",
    ok: { status: 200, description: "One bucket per interval of the range, oldest first", schema: analyticsObject },
    handle: async (req: Request, res, { query }) => {
      const scope = await authorizedScope(ctx, req);
      const key = await findKey(ctx, scope, keyRef(req));
      if (!key) throw keyNotFound();
      res.json(rangeJson(await keyAnalytics(needs, key, query)));
    },
  });
}
