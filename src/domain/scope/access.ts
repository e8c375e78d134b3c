import { levelOf, mayManage, sameScope, type Scope } from "./scope.ts";

// The level rules (docs/api.md, "Verification"): what a key may reach on any platform path, the key
// paths included. One pure function, so /verify, /auth and the key paths can never disagree.

/** The scopes a path names: its first entity (the gate) and its last (the target). */
export interface PathScopes {
  gate: Scope;
  target: Scope;
}

/**
 * May a key of scope `caller` do `method` on a path that names `named` (undefined: a path with no
 * scope prefix, at the caller's own scope), ending at an application's configuration or not?
 * - the first entity the path names must lie inside the caller's scope (as the key paths require);
 * - an application's own key may read its configuration (GET, HEAD) but not change it; below it
 *   (`/applications/{own}/...`) any method.
 */
export function mayReach(caller: Scope, named: PathScopes | undefined, method: string, atApplication: boolean): boolean {
  if (!named) return true;
  if (!mayManage(caller, named.gate)) return false;
  const ownConfiguration = atApplication && levelOf(caller) === "application" && sameScope(caller, named.target);
  return !ownConfiguration || method === "GET" || method === "HEAD";
}
