// Fixed windows of a rate limit (docs/api.md, "Key policy"): a window starts at each multiple of
// `windowSeconds` since 1970-01-01T00:00:00Z, so every process on the database agrees on it without
// asking any other. Times are milliseconds since the epoch.

export function windowStart(nowMs: number, windowSeconds: number): number {
  const length = windowSeconds * 1000;
  return Math.floor(nowMs / length) * length;
}

/** The first instant of the next window: the current one holds up to, not including, it. */
export function windowEnd(nowMs: number, windowSeconds: number): number {
  return windowStart(nowMs, windowSeconds) + windowSeconds * 1000;
}

/** Whole seconds until the window ends, rounded up and at least 1: what `reset` and Retry-After say. */
export function resetSeconds(nowMs: number, windowSeconds: number): number {
  return Math.max(1, Math.ceil((windowEnd(nowMs, windowSeconds) - nowMs) / 1000));
}
