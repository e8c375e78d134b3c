// When `key.expiring` is sent (docs/webhooks.md): at each of KEYPLANE_EXPIRY_NOTICES before a key's
// expiresAt, once per key and expiry. A notice whose time had already passed when the key got that
// expiry is not sent: a key given a day to live hears at one day, not at seven.

export const DEFAULT_EXPIRY_NOTICES = "7d,1d";
const UNIT_S = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
/** A notice further ahead than the longest expiry a key can get (ten years) could never be sent. */
const MAX_NOTICE_S = 315_360_000;

/** The notices of a list such as "7d,1d,12h", in seconds, furthest first; throws with a message for a person. */
export function parseExpiryNotices(text: string): number[] {
  const seconds = new Set<number>();
  for (const part of text.split(",").map((p) => p.trim())) {
    if (part === "") continue;
    const m = /^([0-9]{1,9})([smhd])$/.exec(part);
    if (!m) throw new Error(`"${part}" is not a duration: a whole number and a unit, s, m, h or d (such as 7d or 12h)`);
    const value = Number(m[1]) * UNIT_S[m[2] as keyof typeof UNIT_S];
    if (value < 1 || value > MAX_NOTICE_S) throw new Error(`"${part}" must be from 1s to 3650d`);
    seconds.add(value);
  }
  return [...seconds].sort((a, b) => b - a);
}
