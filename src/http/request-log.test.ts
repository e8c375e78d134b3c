import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { requestId } from "./request-log.ts";

const withId = (id?: string | string[]) => ({ headers: id === undefined ? {} : { "x-request-id": id } }) as unknown as IncomingMessage;

describe("requestId", () => {
  it("keeps a sane X-Request-Id", () => {
    expect(requestId(withId("gw-1.a:b_C"))).toBe("gw-1.a:b_C");
    expect(requestId(withId("x".repeat(128)))).toBe("x".repeat(128));
  });

  it("makes a new id for none, an odd one, an over-long one or several", () => {
    for (const given of [undefined, "", "a b", "a/b", "x".repeat(129), ["a", "b"]]) {
      expect(requestId(withId(given))).toMatch(/^[0-9a-f]{16}-[0-9a-f]+$/);
    }
  });

  it("makes ids of one process prefix and a number that moves", () => {
    const ids = Array.from({ length: 1000 }, () => requestId(withId()));
    expect(new Set(ids).size).toBe(1000);
    expect(new Set(ids.map((id) => id.split("-")[0])).size).toBe(1);
    const numbers = ids.map((id) => parseInt(id.split("-")[1]!, 16));
    expect(numbers.every((n, i) => i === 0 || n === numbers[i - 1]! + 1)).toBe(true);
  });
});
