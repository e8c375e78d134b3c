import { OUTCOME_INDEX } from "../../domain/analytics/usage.ts";
import { forbidden, UNAUTHORIZED, unauthorized } from "../../domain/errors.ts";
import { keyState } from "../../domain/keys/key-state.ts";
import type { KeyCaller } from "../../domain/keys/lineage.ts";
import type { StoredKey } from "../../domain/model.ts";
import type { RestrictionReason } from "../../domain/policy/restrictions/restrictions.ts";
import { scopeOf, type Scope } from "../../domain/scope/scope.ts";
import { isTokenFormat, tokenHashHex } from "../../domain/keys/token.ts";
import type { AuthEndpoint, AuthFailure } from "../../domain/keys/auth-outcome.ts";
import { recordAuthentication } from "./auth-outcome.ts";
import type { VerificationNeeds } from "./needs.ts";
import { after, type Maybe } from "../maybe.ts";
import { factsOf, restrictionOf } from "../policy/policy-check.ts";
import { UNBOUND } from "../policy/policy-chain.ts";
import { Throttled } from "./throttle.ts";

/** The caller behind a request: the key it presented. */
export interface Principal {
  key: StoredKey;
  /** The token presented: the key's keyId. */
  token: string;
  scope: Scope;
  /** The key as its use cases judge what it reaches: restricted, only itself and its descendants (docs/api.md, "Restricted keys"). */
  caller: KeyCaller;
}

function principal(key: StoredKey, token: string, restricted: boolean): Principal {
  return { key, token, scope: scopeOf(key), caller: { id: key.id, lineage: key.lineage, ancestors: key.ancestors, restricted } };
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if any. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^bearer +(\S+) *$/i);
  return match?.[1];
}

const MISSING_TOKEN = "An Authorization: Bearer <API key> header is required.";

/**
 * The usable key behind a token, or why there is none; at once when the cache knows it. A token not
 * of the keyId form is refused before any look-up, so garbage never reaches the cache or the
 * database. A throttled client gets Throttled (429), thrown, without a database query, unless its
 * token is a key this process has seen valid within the stale window: that one is answered as usual,
 * however long the client stays throttled (docs/gateways.md, "Throttling"). Failures are recorded
 * here; success is the caller's to record, once it knows the whole outcome.
 */
export function usableKey(ctx: VerificationNeeds, endpoint: AuthEndpoint, client: string, token: string): Maybe<StoredKey | AuthFailure> {
  const hashHex = isTokenFormat(token) ? tokenHashHex(token) : undefined;
  const retryAfter = ctx.throttle.retryAfter(client);
  if (retryAfter !== undefined && (hashHex === undefined || !ctx.keyCache.seenValid(hashHex))) {
    recordAuthentication(ctx, endpoint, client, "throttled");
    throw new Throttled(retryAfter);
  }
  if (hashHex === undefined) return failed(ctx, endpoint, client, "malformed");
  return after(ctx.keyCache.lookup(hashHex), (key) => {
    if (!key) return failed(ctx, endpoint, client, "unknown");
    // The cached key carries its expiresAt: it stops at that instant on every process, notified or not.
    const now = ctx.clock();
    const state = keyState(key, now);
    if (state !== "active") {
      // The verdict on a known key, for usage analytics (verify.ts counts the others): not on the key paths.
      if (endpoint !== "rest") ctx.analytics?.count(key.lineage, OUTCOME_INDEX[state], 0);
      return failed(ctx, endpoint, client, state);
    }
    // A usable key has authenticated, whatever comes of the request: its last use moves (in batches).
    ctx.lastUse.record(key, now);
    return key;
  });
}

function failed(ctx: VerificationNeeds, endpoint: AuthEndpoint, client: string, failure: AuthFailure): AuthFailure {
  recordAuthentication(ctx, endpoint, client, failure);
  return failure;
}

/** A request on keyplane's own key paths, as a policy's restrictions judge it (docs/api.md, "Key policy"). */
export interface KeyPathRequest {
  /** Who asks (http/verification/client-address.ts): failures are counted against it, and `ips` judge it. */
  client: string;
  referrer: string | undefined;
  method: string | undefined;
  path: string | undefined;
}

/** Why a usable key may not be used from where it is: the first restriction of its policies that refuses. */
export type Refusal = { refused: string } | { restricted: RestrictionReason };

/**
 * The caller behind an Authorization header, or why there is none (the message of a 401, or the
 * restriction of a 403); at once when the caches know it. Refusals are values, not exceptions: half of
 * a flood of bad tokens would otherwise go to capturing stack traces. A throttled client gets Throttled.
 * Restrictions apply here as on /verify and /auth; limits and credits count only there.
 */
export function verify(ctx: VerificationNeeds, header: string | undefined, request: KeyPathRequest): Maybe<Principal | Refusal> {
  const token = bearerToken(header);
  if (token === undefined) return { refused: MISSING_TOKEN };
  const { client } = request;
  return after(usableKey(ctx, "rest", client, token), (key) => {
    if (typeof key === "string") return { refused: UNAUTHORIZED };
    recordAuthentication(ctx, "rest", client, "valid");
    const chain = ctx.policies.chainOf(key);
    // A key no policy binds is let through at once, as before policies were.
    if (chain === UNBOUND && key.policy === null && key.ancestors.length === 0) return principal(key, token, false);
    return after(chain, (c): Maybe<Principal | Refusal> => {
      const reason = restrictionOf(c, () => factsOf({ ip: client, referrer: request.referrer, method: request.method, path: request.path }));
      if (reason) {
        ctx.metrics?.policyDecision("restricted");
        return { restricted: reason };
      }
      return after(ctx.policies.restrictedOf(key), (restricted) => principal(key, token, restricted));
    });
  });
}

/** What a 403 of a restriction says: which part of the request the key may not be used with. */
export function restrictedMessage(reason: RestrictionReason): string {
  const what = { ip: "client address", referrer: "referrer", method: "method", path: "path" }[reason];
  return `This key may not be used with this ${what} (its policy's restrictions).`;
}

/** The caller behind an Authorization header, or a 401 or 403 error. */
export async function authenticate(ctx: VerificationNeeds, header: string | undefined, request: KeyPathRequest): Promise<Principal> {
  const result = await verify(ctx, header, request);
  if ("refused" in result) throw unauthorized(result.refused);
  if ("restricted" in result) throw forbidden(restrictedMessage(result.restricted));
  return result;
}
