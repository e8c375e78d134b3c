import { z } from "zod";
import { codePoints } from "../text.ts";

/** The longest key name, in characters (code points: 128 emoji are 128 characters). */
export const KEY_NAME_MAX = 128;

/** A key's name, wherever a key is named (REST bodies, ApiKey specs): 1-128 characters, no control characters. */
export const keyNameSchema = z
  .string()
  .min(1, "must not be empty")
  .refine((s) => s.length <= KEY_NAME_MAX || codePoints(s) <= KEY_NAME_MAX, `must be at most ${KEY_NAME_MAX} characters`)
  .meta({ maxLength: KEY_NAME_MAX })
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f]*$/, "must not contain control characters");
