// keys/ of domain/: a key's token and its format, name, state, events and their authors, lineage, expiry
// and how an authentication can end. It may use domain/'s top files, scope/ and policy/.
//
// Whether a key may be used as a credential at a given time (docs/api.md, "Lifecycle"). Expiry comes
// first: an expired key is gone like a deleted one, whether or not it was also disabled.
export type KeyState = "active" | "disabled" | "expired";

export interface KeyStateInput {
  active: boolean;
  expiresAt: Date | null;
}

/** Expired from its expiresAt on: at that very instant the key is already refused. */
export function isExpired(expiresAt: Date | null, now: Date): boolean {
  return expiresAt !== null && expiresAt.getTime() <= now.getTime();
}

export function keyState(key: KeyStateInput, now: Date): KeyState {
  if (isExpired(key.expiresAt, now)) return "expired";
  return key.active ? "active" : "disabled";
}
