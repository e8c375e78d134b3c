import pg from "pg";
import { describe, expect, it } from "vitest";
import { parseTimestamptz } from "./timestamp.ts";

const general = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date;

describe("parseTimestamptz", () => {
  it.each([
    "2026-11-23 10:00:00+00",
    "2026-11-23 10:00:00.1+00",
    "2026-11-23 10:00:00.12+00",
    "2026-11-23 10:00:00.123+00",
    "2026-11-23 10:00:00.123456+00",
    "2026-11-23 10:00:00.999999+00",
    "2024-02-29 23:59:59.5+00",
    "1970-01-01 00:00:00+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999+00",
    // not the UTC form: the driver's parser answers
    "2026-11-23 12:00:00+02",
    "2026-11-23 10:00:00+05:30",
    "0044-03-15 12:00:00+00 BC",
    "infinity",
  ])("reads %s as the driver does", (text) => {
    expect(Number(parseTimestamptz(text))).toEqual(Number(general(text)));
  });
});
