/** One line of an NDJSON body: its text, or that it was longer than the bound (its text dropped). */
export type BodyLine = { text: string } | { tooLong: true };

/**
 * The lines of a body as they arrive, without the line ends (`\n` or `\r\n`); empty lines are lines
 * too, so line numbers are the file's. Never more than `maxBytes` of one line is held: the rest of a
 * longer one is skipped up to its end. A last line without its `\n` is given as it is (a body cut
 * there leaves half a JSON value, which its reader refuses). Reading waits for the consumer: the
 * request is not read faster than its lines are taken.
 */
export async function* ndjsonLines(body: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<BodyLine> {
  let parts: Buffer[] = [];
  let held = 0;
  let skipping = false;
  const take = (): BodyLine => {
    const line = parts.length === 1 ? parts[0]! : Buffer.concat(parts, held);
    parts = [];
    held = 0;
    const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    return { text: line.toString("utf8", 0, end) };
  };
  for await (const chunk of body) {
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      if (skipping) skipping = false;
      else if (held + newline - start > maxBytes) yield { tooLong: true };
      else {
        parts.push(chunk.subarray(start, newline));
        held += newline - start;
        yield take();
      }
      parts = [];
      held = 0;
      start = newline + 1;
    }
    if (skipping || start === chunk.length) continue;
    if (held + chunk.length - start > maxBytes) {
      parts = [];
      held = 0;
      skipping = true;
      yield { tooLong: true };
    } else {
      // A copy: the chunk's memory is not held for the sake of a line's tail.
      parts.push(Buffer.from(chunk.subarray(start)));
      held += chunk.length - start;
    }
  }
  if (held > 0) yield take();
}
