import { unauthorized } from "../domain/errors.ts";
import { scopeOf, type StoredKey } from "../domain/model.ts";
import type { Scope } from "../domain/scope.ts";
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

/**
 * A live, active key for the token, or 401. A token not of the keyId form is refused before any
 * look-up, so garbage never reaches the cache or the database.
 */
export async function authenticate(ctx: Context, header: string | undefined): Promise<Principal> {
  const token = bearerToken(header);
  if (token === undefined) throw unauthorized("An Authorization: Bearer <API key> header is required.");
  if (!isTokenFormat(token)) throw unauthorized();
  const key = await ctx.verifier.lookup(tokenHash(token));
  if (!key?.active) throw unauthorized();
  return { key, token, scope: scopeOf(key) };
}
