import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The house by capability (docs/architecture.md): no folder of src/ becomes a drawer again. A folder
// holds at most 20 source files directly (tests included), and no more than a fifth of src/'s lines.
const SRC = join(import.meta.dirname, "../../src");
const MAX_FILES = 20;
const MAX_SHARE = 0.2;

interface Folder {
  path: string;
  files: number;
  lines: number;
}

/** Every folder under src/ (src/ itself included), with the .ts and .js files directly in it. */
function folders(dir: string, out: Folder[] = []): Folder[] {
  const entries = readdirSync(dir, { withFileTypes: true });
  const sources = entries.filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name));
  const lines = sources.reduce((n, e) => n + readFileSync(join(dir, e.name), "utf8").split("\n").length, 0);
  out.push({ path: relative(join(SRC, ".."), dir), files: sources.length, lines });
  for (const e of entries) if (e.isDirectory()) folders(join(dir, e.name), out);
  return out;
}

describe("the house", () => {
  const all = folders(SRC);
  const total = all.reduce((n, f) => n + f.lines, 0);

  it.each(all.map((f) => [f.path, f] as const))("%s holds at most 20 source files directly", (_path, folder) => {
    expect(folder.files).toBeLessThanOrEqual(MAX_FILES);
  });

  it.each(all.map((f) => [f.path, f] as const))("%s holds at most a fifth of src/'s lines directly", (_path, folder) => {
    expect(folder.lines / total).toBeLessThanOrEqual(MAX_SHARE);
  });
});
