import { describe, expect, it } from "vitest";
import { StoreUnavailable, UniqueViolation } from "../domain/errors.ts";
import { mayRetry, translated, translateError } from "./errors.ts";

// The one place the drivers' errors are read: what each becomes for the rest of keyplane.
const driverError = (fields: { code?: string; message?: string }) => Object.assign(new Error(fields.message ?? "driver error"), fields);

describe("translateError", () => {
  it.each([
    ["a unique index refusing the write (23505)", driverError({ code: "23505", message: "duplicate key value" }), UniqueViolation],
    ["a refused connection", driverError({ code: "ECONNREFUSED" }), StoreUnavailable],
    ["a reset connection", driverError({ code: "ECONNRESET" }), StoreUnavailable],
    ["the server shutting down (57P01)", driverError({ code: "57P01", message: "terminating connection due to administrator command" }), StoreUnavailable],
    ["the server starting up (57P03)", driverError({ code: "57P03", message: "the database system is starting up" }), StoreUnavailable],
    ["idle_session_timeout (57P05)", driverError({ code: "57P05", message: "terminating connection due to idle-session timeout" }), StoreUnavailable],
    ["idle_in_transaction_session_timeout (25P03)", driverError({ code: "25P03" }), StoreUnavailable],
    ["a connection found broken before the statement", driverError({ message: "Client has encountered a connection error and is not queryable" }), StoreUnavailable],
    ["a connection exception (class 08)", driverError({ code: "08006" }), StoreUnavailable],
    ["too many connections (53300)", driverError({ code: "53300" }), StoreUnavailable],
    ["a write refused by a standby or a read-only server (25006)", driverError({ code: "25006", message: "cannot execute INSERT in a read-only transaction" }), StoreUnavailable],
    ["the pool's connect time-out", driverError({ message: "timeout exceeded when trying to connect" }), StoreUnavailable],
    ["a connection terminated under a query", driverError({ message: "Connection terminated unexpectedly" }), StoreUnavailable],
    ["a query read time-out", driverError({ message: "Query read timeout" }), StoreUnavailable],
    ["a closed PGlite", driverError({ message: "PGlite is closed" }), StoreUnavailable],
  ])("%s", (_what, error, expected) => {
    expect(translateError(error)).toBeInstanceOf(expected);
  });

  it.each([
    ["a check constraint (23514): a defect, not the caller's", driverError({ code: "23514", message: "violates check constraint" })],
    ["a syntax error", driverError({ code: "42601", message: "syntax error" })],
    ["an error without a code", new Error("something else")],
    ["a thrown string", "not an error"],
    ["null", null],
  ])("passes %s on as it is", (_what, error) => {
    expect(translateError(error)).toBe(error);
  });

  it("keeps an error already translated", () => {
    const unavailable = new StoreUnavailable("ECONNREFUSED");
    expect(translateError(unavailable)).toBe(unavailable);
  });

  it("says why the store is unavailable, for the log", () => {
    expect((translateError(driverError({ code: "57P01" })) as StoreUnavailable).reason).toBe("57P01");
  });

  it("translates what a transaction's work throws", async () => {
    await expect(translated(() => Promise.reject(driverError({ code: "23505" })))).rejects.toBeInstanceOf(UniqueViolation);
    await expect(translated(() => Promise.resolve(7))).resolves.toBe(7);
  });
});

// A statement whose connection went under it is sent again, once, only where that cannot do twice
// what it should do once.
describe("mayRetry", () => {
  const terminated = driverError({ code: "57P01", message: "terminating connection due to administrator command" });
  const idleEnded = driverError({ code: "57P05", message: "terminating connection due to idle-session timeout" });
  const write = "WITH gone AS (UPDATE api_keys k SET deleted_at = $2 WHERE k.id = $1 RETURNING k.*) SELECT count(*) FROM gone";
  it.each([
    ["a read whose session the server ended", terminated, "SELECT k.id FROM api_keys k WHERE k.token_hash = $1", true],
    ["a read, indented, after a reset socket", driverError({ code: "ECONNRESET" }), "\n  select 1", true],
    ["a read on a connection that ended unexpectedly", driverError({ message: "Connection terminated unexpectedly" }), "SELECT 1", true],
    ["BEGIN on a connection found gone", terminated, "BEGIN", true],
    ["a write whose session ended while idle (it never ran)", idleEnded, write, true],
    ["a write whose session ended under it: it may have been committed", terminated, write, false],
    ["a write after a reset socket", driverError({ code: "EPIPE" }), "INSERT INTO api_keys VALUES ($1)", false],
    ["a read that timed out: the database may not be answering at all", driverError({ message: "Query read timeout" }), "SELECT 1", false],
    ["a read refused a connection: the database is down", driverError({ code: "ECONNREFUSED" }), "SELECT 1", false],
    ["a read the server is not ready for", driverError({ code: "57P03" }), "SELECT 1", false],
    ["a read that failed for itself", driverError({ code: "42601", message: "syntax error" }), "SELECT 1", false],
    ["a read whose caller was already told the store is unavailable", new StoreUnavailable("timeout"), "SELECT 1", false],
  ])("%s", (_what, error, statement, expected) => {
    expect(mayRetry(error, statement)).toBe(expected);
  });
});
