// leaks/ of domain/: leak reports, their signatures (GitHub's secret scanning) and what a leak policy does.
// It may use domain/'s top files and policy/.
//
// A leak report (docs/leaks.md): tokens a scanner found where they must not be, each answered with a
// label: whether it is, or was, a keyplane key. The answer names a token by its SHA-256 only.

/** The most tokens one report may carry; more is 413, like a body over the limit. */
export const LEAK_REPORTS_MAX = 1000;

export type LeakLabel = "true_positive" | "false_positive";

/** One token reported, with what the scanner says of it (GitHub's `type`; where it was found). */
export interface LeakReport {
  token: string;
  type: string | null;
  url: string | null;
  source: string | null;
}

/** What the report is answered for one token: GitHub's names, so its partner program reads them as they are. */
export interface LeakAnswer {
  token_hash: string;
  token_type: string | null;
  label: LeakLabel;
}
