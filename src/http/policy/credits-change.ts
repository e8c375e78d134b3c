import type { CreditsChange } from "../../services/policy/policies.ts";

/** A credits body (schemas.ts: exactly one of the two) as the change it asks for. */
export function creditsChange(body: { remaining?: number | undefined; add?: number | undefined }): CreditsChange {
  return body.remaining !== undefined ? { remaining: body.remaining } : { add: body.add ?? 0 };
}
