import { z } from "zod";

/** A key's name, wherever a key is named (REST bodies, ApiKey specs): 1-128 characters, no control characters. */
export const keyNameSchema = z
  .string()
  .min(1, "must not be empty")
  .max(128, "must be at most 128 characters")
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f]*$/, "must not contain control characters");
