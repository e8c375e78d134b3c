import type { AuthEndpoint, AuthOutcome } from "../../domain/keys/auth-outcome.ts";
import type { VerificationNeeds } from "./needs.ts";

// Every authentication's outcome passes through here, once, whichever endpoint took the key: this is
// where failures feed the throttle (and where counting outcomes belongs).

const FAILURES = new Set<AuthOutcome>(["malformed", "unknown", "disabled", "expired"]);

export function recordAuthentication(ctx: Pick<VerificationNeeds, "metrics" | "throttle">, endpoint: AuthEndpoint, client: string, outcome: AuthOutcome): void {
  ctx.metrics?.authentication(endpoint, outcome);
  if (FAILURES.has(outcome)) ctx.throttle.fail(client);
}
