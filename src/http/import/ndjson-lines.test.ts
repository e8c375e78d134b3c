import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ndjsonLines, type BodyLine } from "./ndjson-lines.ts";

async function lines(chunks: string[], max = 10): Promise<BodyLine[]> {
  const out: BodyLine[] = [];
  for await (const line of ndjsonLines(Readable.from(chunks.map((c) => Buffer.from(c))), max)) out.push(line);
  return out;
}

describe("ndjsonLines", () => {
  it.each<[string, string[], BodyLine[]]>([
    ["lines in one chunk", ["a\nbb\n"], [{ text: "a" }, { text: "bb" }]],
    ["a line across chunks", ["a", "b", "c\nd\n"], [{ text: "abc" }, { text: "d" }]],
    ["CRLF line ends", ["a\r\nb\r\n"], [{ text: "a" }, { text: "b" }]],
    ["empty lines keep their numbers", ["a\n\nb\n"], [{ text: "a" }, { text: "" }, { text: "b" }]],
    ["a last line without its end", ["a\nb"], [{ text: "a" }, { text: "b" }]],
    ["a line over the bound in one chunk", ["a\n0123456789X\nb\n"], [{ text: "a" }, { tooLong: true }, { text: "b" }]],
    ["a line over the bound across chunks", ["a\n012345", "6789XYZ", "more\nb\n"], [{ text: "a" }, { tooLong: true }, { text: "b" }]],
    ["a line of exactly the bound", ["0123456789\n"], [{ text: "0123456789" }]],
  ])("%s", async (_name, chunks, expected) => {
    expect(await lines(chunks)).toEqual(expected);
  });

  it("a character split between two chunks is read whole", async () => {
    const bytes = Buffer.from("é\n");
    const out: BodyLine[] = [];
    for await (const line of ndjsonLines(Readable.from([bytes.subarray(0, 1), bytes.subarray(1)]), 10)) out.push(line);
    expect(out).toEqual([{ text: "é" }]);
  });
});
