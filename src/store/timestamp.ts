import pg from "pg";

// PostgreSQL's text form of a timestamptz in a UTC session ("2026-11-23 10:00:00.123456+00"), read
// into a Date by hand: a long list reads several per key, and the driver's general parser (a regular
// expression for every era and offset) cost more than the rest of reading the row. Anything else
// (another offset, BC, early years, infinity) goes to the driver's parser.
const general = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date;
// Years from 1000 on: Date.UTC reads years below 100 as 19xx.
const UTC_FORM = /^[1-9]\d{3}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$/;

export function parseTimestamptz(text: string): Date {
  if (!UTC_FORM.test(text)) return general(text);
  const n = (from: number, digits: number) => {
    let value = 0;
    for (let i = from; i < from + digits; i++) value = value * 10 + text.charCodeAt(i) - 48;
    return value;
  };
  const fraction = text.length - 3 - 20; // digits after the point, if any
  const ms = fraction > 0 ? n(20, Math.min(3, fraction)) * 10 ** Math.max(0, 3 - fraction) : 0;
  return new Date(Date.UTC(n(0, 4), n(5, 2) - 1, n(8, 2), n(11, 2), n(14, 2), n(17, 2), ms));
}

/** The driver's type parsers, with timestamptz read by parseTimestamptz. */
export const typeParsers = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.TIMESTAMPTZ && format !== "binary" ? parseTimestamptz : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};
