import pino from "pino";
import { describe, expect, it } from "vitest";
import { backends, openTestDatabase } from "../../test/support/databases.ts";
import { arrayLiteral } from "./array-literal.ts";

describe("arrayLiteral", () => {
  it("writes each kind of element", () => {
    expect(arrayLiteral([])).toBe("{}");
    expect(arrayLiteral([1, null, -2.5])).toBe("{1,NULL,-2.5}");
    expect(arrayLiteral([true, false])).toBe("{true,false}");
    expect(arrayLiteral([new Date(Date.UTC(2026, 10, 29, 8, 0, 0, 123))])).toBe("{2026-11-29T08:00:00.123Z}");
    expect(arrayLiteral(["a", 'say "hi"', "back\\slash"])).toBe('{"a","say \\"hi\\"","back\\\\slash"}');
  });

  it.each(backends())("is read back by PostgreSQL (%s) as the very values, whatever the strings hold", async (backend) => {
    const { db, drop } = await openTestDatabase(backend, pino({ level: "silent" }));
    try {
      const texts = ["", "NULL", "null", "a,b", "{x}", " spaced ", 'q"uote', "back\\slash", "\\\"", "ünïcödé ☎", "line\nbreak", '{"json":[1,"two"]}'];
      const [row] = await db.query<{ t: string[]; n: (number | null)[]; b: boolean[]; d: Date[] }>(
        "SELECT $1::text[] AS t, $2::integer[] AS n, $3::boolean[] AS b, $4::timestamptz[] AS d",
        [arrayLiteral([...texts, null]), arrayLiteral([3, null, -7]), arrayLiteral([true, false]), arrayLiteral([new Date(1_700_000_000_123)])],
      );
      expect(row!.t).toEqual([...texts, null]);
      expect(row!.n).toEqual([3, null, -7]);
      expect(row!.b).toEqual([true, false]);
      expect(row!.d).toEqual([new Date(1_700_000_000_123)]);
    } finally {
      await drop();
    }
  });
});
