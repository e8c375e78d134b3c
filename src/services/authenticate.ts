import { UNAUTHORIZED, unauthorized } from "../domain/errors.ts";
import { keyState } from "../domain/key-state.ts";
import type { StoredKey } from "../domain/model.ts";
import { scopeOf, type Scope } from "../domain/scope.ts";
import { isTokenFormat, tokenHash } from "../domain/token.ts";
import type { Context } from "./context.ts";

/** The caller behind a request: the key it presented. */
export interface Principal {
  key: StoredKey;
  /** The token presented: the key's keyId. */
  token: string;
  scope: Scope;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if any. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^bearer +(\S+) *$/i);
  return match?.[1];
}

const MISSING_TOKEN = "An Authorization: Bearer <API key> header is required.";

/**
 * The caller behind an Authorization header, or why there is none (the message of a 401). A token
 * not of the keyId form is refused before any look-up, so garbage never reaches the cache or the
 * database. Refusals are values, not exceptions: half of a flood of bad tokens would otherwise go to
 * capturing stack traces.
 */
export async function verify(ctx: Context, header: string | undefined): Promise<Principal | { refused: string }> {
  const token = bearerToken(header);
  if (token === undefined) return { refused: MISSING_TOKEN };
  if (!isTokenFormat(token)) return { refused: UNAUTHORIZED };
  const key = await ctx.keyCache.lookup(tokenHash(token));
  if (!key) return { refused: UNAUTHORIZED };
  // The cached key carries its expiresAt: it stops at that instant on every process, notified or not.
  const now = ctx.clock();
  if (keyState(key, now) !== "active") return { refused: UNAUTHORIZED };
  ctx.lastUse.record(key, now);
  return { key, token, scope: scopeOf(key) };
}

/** The caller behind an Authorization header, or a 401 error. */
export async function authenticate(ctx: Context, header: string | undefined): Promise<Principal> {
  const result = await verify(ctx, header);
  if ("refused" in result) throw unauthorized(result.refused);
  return result;
}
