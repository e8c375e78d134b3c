import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect } from "vitest";

// `keyplane <command>` as a user runs it: the real CLI in a process of its own, with PATH and the
// environment it is given, nothing else.
const MAIN = join(import.meta.dirname, "../../src/cli/main.ts");

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `keyplane ...argv` with `env` (a variable given as undefined is left out) and `stdin` on its standard input. */
export function runCli(argv: string[], env: Record<string, string | undefined>, stdin = ""): Promise<CliRun> {
  const defined = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [MAIN, ...argv], { env: { PATH: process.env.PATH ?? "", ...defined } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

/** What a run that succeeded printed with `-o json`, parsed; it must have written nothing on stderr. */
export function cliJson(run: CliRun) {
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

/** A run that failed as the CLI fails: a non-zero exit, nothing on stdout, one line on stderr (no stack trace). */
export function expectCliFailure(run: CliRun, pattern: RegExp): void {
  expect(run.code).not.toBe(0);
  expect(run.stdout).toBe("");
  expect(run.stderr.trim()).toMatch(pattern);
  expect(run.stderr.trim().split("\n")).toHaveLength(1);
}
