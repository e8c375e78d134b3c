import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../support/process.ts";

// The README's quick start, run as a newcomer runs it: every shell block of the section, in order, in
// one bash, against `npm start`'s embedded default (a real keyplane process with its data dir at
// ./.keyplane). What the README says a command prints, it must print.
const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

/** The section's shell blocks, joined into one script. */
function quickStart(): string {
  const section = README.slice(README.indexOf("## Quick start"), README.indexOf("\n## ", README.indexOf("## Quick start") + 1));
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).join("\n");
}

/** Each status the script prints with `-w '%{http_code}'`, and what the line's comment says it is, if it says. */
function statusLines(script: string): Array<number | undefined> {
  return script.split("\n").filter((line) => line.includes("%{http_code}")).map((line) => {
    const said = /#\s*(\d{3})\b/.exec(line);
    return said ? Number(said[1]) : undefined;
  });
}

describe("the README's quick start", () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "keyplane-readme-"));
    server = await startServerProcess({ KEYPLANE_DATA_DIR: join(dir, ".keyplane") });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("does what it says, top to bottom", { timeout: 60_000 }, async () => {
    const script = quickStart();
    const expected = statusLines(script);
    expect(expected.filter((s) => s !== undefined).length).toBeGreaterThanOrEqual(4);
    // The printed statuses are marked, so that they can be told from the JSON around them.
    const runnable = script.replaceAll("localhost:8080", new URL(server.url).host).replaceAll("'%{http_code}", "'\\nstatus %{http_code}\\n");
    const { stdout } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", runnable], { cwd: dir });
    const printed = [...stdout.matchAll(/^status (\d{3})$/gm)].map((m) => Number(m[1]));
    expect(printed).toHaveLength(expected.length);
    expected.forEach((status, i) => {
      if (status !== undefined) expect(printed[i], `status line ${i + 1}`).toBe(status);
    });
    expect(stdout).not.toMatch(/"status":5\d\d(?!.*"bad_gateway")/);
    expect(stdout).toMatch(/\{"valid":true,"code":"VALID","key":\{.*"level":"customer"\}/);
  });
});
