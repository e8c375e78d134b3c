import type { Route } from "../route.ts";

// Every key path (docs/api.md, "Keys"): one set of operations on each base, under each spelling.
export const BASES: { path: string; tag: string }[] = [
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
export function nounOf(base: string): string {
  return [...base.matchAll(/\/(customers|domains|applications|subscribers)\//g)].map(([, c]) => c![0]!.toUpperCase() + c!.slice(1, -1)).join("");
}

/** The spellings clients of the original platform use: `apikeys` for `keys`, `tenants` for `customers`. */
export function spellings(path: string): string[] {
  const keys = [path, path.replace(/\/keys(?=\/|$)/, "/apikeys")];
  return path.startsWith("/customers/") ? [...keys, ...keys.map((p) => p.replace(/^\/customers\//, "/tenants/"))] : keys;
}

/** A route under each spelling of its path: the others refer to it. */
export function aliases(r: Route): Route[] {
  return [...new Set(spellings(r.path))].map((path) => (path === r.path ? r : { ...r, path, aliasOf: r.path }));
}
