// Go durations as spec.rotation writes them (docs/operator.md, "Rotation"): a sequence of decimal numbers,
// each with a unit of h, m or s, such as "720h", "1h30m" or "1.5s".

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000 } as const;

/** The pattern the CRD's schema checks; RE2-safe (no look-arounds). */
export const GO_DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?[hms])+$";
const whole = new RegExp(GO_DURATION_PATTERN);
const part = /([0-9]+(?:\.[0-9]+)?)([hms])/g;

/** The duration in milliseconds, or undefined when the text is not a Go duration of h, m and s. */
export function parseGoDuration(text: string): number | undefined {
  if (!whole.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(part)) ms += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  return Math.round(ms);
}
