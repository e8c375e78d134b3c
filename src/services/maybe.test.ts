import { describe, expect, it } from "vitest";
import { after, runNowOrLater } from "./maybe.ts";

describe("after", () => {
  it("goes on at once with a value, and gives a value", () => {
    expect(after(2, (n) => n * 3)).toBe(6);
  });

  it("goes on once a promise settles, and gives a promise", async () => {
    const later = after(Promise.resolve(2), (n) => n * 3);
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toBe(6);
  });

  it("gives the next step's promise when only that step waits", async () => {
    expect(await after(2, (n) => Promise.resolve(n * 3))).toBe(6);
  });
});

describe("runNowOrLater", () => {
  it("runs a step that needs no waiting within the call", () => {
    let ran = false;
    runNowOrLater(() => void (ran = true), () => {});
    expect(ran).toBe(true);
  });

  it("hands an error thrown at once, or a rejection, to fail", async () => {
    const failures: unknown[] = [];
    runNowOrLater(() => {
      throw new Error("now");
    }, (error) => failures.push(error));
    runNowOrLater(() => Promise.reject(new Error("later")), (error) => failures.push(error));
    await new Promise((resolve) => setImmediate(resolve));
    expect(failures.map((e) => (e as Error).message)).toEqual(["now", "later"]);
  });
});
