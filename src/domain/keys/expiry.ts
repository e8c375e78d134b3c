import { badRequest } from "../errors.ts";

// Expiry and rotation limits (docs/api.md, "Lifecycle").
export const EXPIRES_IN_SECONDS = { min: 60, max: 315_360_000 } as const; // a minute to ten years
export const GRACE_PERIOD_SECONDS = { min: 0, max: 2_592_000 } as const; // up to thirty days

/** When a new key expires: at `expiresAt`, or `expiresIn` seconds from `now`; null for never. */
export function expiryOf(request: { expiresAt?: Date | undefined; expiresIn?: number | undefined }, now: Date): Date | null {
  if (request.expiresAt !== undefined) return request.expiresAt;
  if (request.expiresIn !== undefined) return new Date(now.getTime() + request.expiresIn * 1000);
  return null;
}

/** A requested expiry must lie in the future: a key cannot be born expired (400). */
export function requireFuture(expiresAt: Date | null, now: Date): void {
  if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
    throw badRequest(`Invalid request body: expiresAt: must be in the future (now is ${now.toISOString()}).`);
  }
}
