import { z } from "zod";
import { LEAK_REPORTS_MAX } from "../../domain/leaks/leak-report.ts";
import { text } from "../schemas.ts";

// Leak reports (docs/leaks.md), as GitHub's secret scanning and other scanners send them, and the
// answer. Any text is a token to look at (most are not keyplane's, and are answered false_positive);
// what is kept, in the `leaked` event, is text as docs/api.md ("Text") allows it.

const MORE_IS_413 = `At most ${LEAK_REPORTS_MAX} tokens: more is 413 payload_too_large, as a body over the limit is.`;
const url = text(4096).nullable().optional().describe("Where the token was found.");
const source = text(256).nullable().optional().describe("What kind of place it was found in (GitHub: content, commit, pull_request_title, ...).");

export const githubReportsBody = z.array(z.object({
  token: z.string().describe("What GitHub found: a string that matches keyplane's token pattern."),
  type: text(256).nullable().optional().describe("The token type's name GitHub was told at enrolment; answered back as token_type."),
  url,
  source,
})).meta({ maxItems: LEAK_REPORTS_MAX }).describe(`GitHub's secret scanning report, signed. ${MORE_IS_413}`);

export const adminReportsBody = z.object({
  tokens: z.array(z.string()).meta({ maxItems: LEAK_REPORTS_MAX }).describe(`The tokens found. ${MORE_IS_413}`),
  url,
  source,
});

export const leakLabelObject = z.object({
  token_hash: z.string().regex(/^[0-9a-f]{64}$/).describe("SHA-256 of the token, in hex: the answer names no token."),
  token_type: z.string().nullable().describe("The report's type for the token (GitHub's); null where it gave none."),
  label: z.enum(["true_positive", "false_positive"]).describe("true_positive: the token is, or was, a keyplane key."),
}).strict();
