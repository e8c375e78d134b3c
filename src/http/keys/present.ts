import { keyJson, keyJsonWithoutToken } from "../../domain/keys/key-json.ts";
import type { Key, StoredKey } from "../../domain/model.ts";
import type { Level } from "../../domain/scope/scope.ts";
import type { Principal } from "../../services/verification/authenticate.ts";

// Keys and events as the API shows them. The shapes themselves are domain/keys/key-json.ts's, so that
// webhook messages show keys and events exactly as the API does (docs/webhooks.md).
export { eventJson, keyJson } from "../../domain/keys/key-json.ts";

/** The caller's own key: it came with authentication, and its keyId is the token the caller presented. */
export function callerKeyJson(principal: Principal): Record<string, unknown> {
  return keyJson(callerKey(principal));
}

/** The caller's own key as a Key: its keyId is the token the caller presented. */
export function callerKey({ key, token }: Principal): Key {
  const { sealed: _sealed, hash: _hash, ...shown } = key;
  return { ...shown, keyId: token };
}

/** A key as POST /verify shows it: the full shape without its keyId (the caller has it), and its level. */
export function verifiedKeyJson(key: StoredKey, level: Level): Record<string, unknown> {
  return { ...keyJsonWithoutToken(key), level };
}
