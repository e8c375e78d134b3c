import { describe, expect, it } from "vitest";
import { StoreUnavailable, UniqueViolation } from "../domain/errors.ts";
import { translated, translateError } from "./errors.ts";

// The one place the drivers' errors are read: what each becomes for the rest of keyplane.
const driverError = (fields: { code?: string; message?: string }) => Object.assign(new Error(fields.message ?? "driver error"), fields);

describe("translateError", () => {
  it.each([
    ["a unique index refusing the write (23505)", driverError({ code: "23505", message: "duplicate key value" }), UniqueViolation],
    ["a refused connection", driverError({ code: "ECONNREFUSED" }), StoreUnavailable],
    ["a reset connection", driverError({ code: "ECONNRESET" }), StoreUnavailable],
    ["the server shutting down (57P01)", driverError({ code: "57P01", message: "terminating connection due to administrator command" }), StoreUnavailable],
    ["a connection exception (class 08)", driverError({ code: "08006" }), StoreUnavailable],
    ["too many connections (53300)", driverError({ code: "53300" }), StoreUnavailable],
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
