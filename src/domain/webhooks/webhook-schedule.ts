// When a webhook message is tried again (docs/webhooks.md, "Retries"): 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h and 10 h after the attempt before, each ±10% so that the messages of one outage do not all come
// back at once; then the delivery has failed. A receiver's Retry-After of up to an hour replaces the
// schedule's wait; a longer one is not honoured (the schedule's is used), so a receiver cannot park a
// message for days.

/** The waits after the first, second, ... seventh failed attempt, in seconds: eight attempts in all. */
export const RETRY_DELAYS_S = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;
/** An attempt is successful only with a 2xx within this long. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
export const MAX_RETRY_AFTER_S = 3_600;
const JITTER = 0.1;

/**
 * When to try again after the `attempts`-th attempt failed at `failedAt`; null when that was the last.
 * `random` is in [0, 1) (Math.random, or a test's own).
 */
export function nextAttemptAt(attempts: number, failedAt: Date, retryAfterS: number | undefined, random: () => number): Date | null {
  if (attempts >= MAX_ATTEMPTS) return null;
  if (retryAfterS !== undefined && retryAfterS <= MAX_RETRY_AFTER_S) return new Date(failedAt.getTime() + retryAfterS * 1000);
  const base = RETRY_DELAYS_S[Math.max(0, attempts - 1)]! * 1000;
  return new Date(failedAt.getTime() + Math.round(base * (1 - JITTER + 2 * JITTER * random())));
}

/**
 * A Retry-After header's wait in whole seconds (RFC 9110 10.2.3: delay-seconds, or an HTTP-date,
 * judged against `now`); undefined when absent or unreadable.
 */
export function retryAfterSeconds(header: string | undefined, now: Date): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^[0-9]{1,10}$/.test(text)) return Number(text);
  // An IMF-fixdate, or the two obsolete forms HTTP still accepts: all name a weekday first.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}
