import type { Context } from "../context.ts";

// Every authentication's outcome passes through here, once, whichever endpoint took the key: this is
// where failures feed the throttle (and where counting outcomes belongs).
export type AuthEndpoint = "rest" | "verify" | "auth";
export type AuthFailure = "malformed" | "unknown" | "disabled" | "expired";
export type AuthOutcome = "valid" | "forbidden" | "throttled" | AuthFailure;

const FAILURES = new Set<AuthOutcome>(["malformed", "unknown", "disabled", "expired"]);

export function recordAuthentication(ctx: Context, endpoint: AuthEndpoint, client: string, outcome: AuthOutcome): void {
  ctx.metrics?.authentication(endpoint, outcome);
  if (FAILURES.has(outcome)) ctx.throttle.fail(client);
}
