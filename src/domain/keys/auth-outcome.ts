// How one authentication can end, and on which endpoint: what services/verification/auth-outcome.ts
// records, and what the metrics count authentications by.
export type AuthEndpoint = "rest" | "verify" | "auth";
export type AuthFailure = "malformed" | "unknown" | "disabled" | "expired";
export type AuthOutcome = "valid" | "forbidden" | "throttled" | AuthFailure;
