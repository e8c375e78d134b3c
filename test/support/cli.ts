import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect } from "vitest";
import type { TestServiceOptions } from "./service.ts";
import { useServed, type Served } from "./world.ts";

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

export interface CliSuite {
  /** The keyplane the command reaches (world.ts's useServed): valid from the suite's own beforeAll on. */
  served(): Served;
  /** `keyplane <command> ...args` against it, as acme's customer key unless `env` says otherwise. */
  run(args: string[], env?: Record<string, string | undefined>, stdin?: string): Promise<CliRun>;
  /** The same with `-o json`: what a run that succeeded printed, parsed (cliJson). */
  json(args: string[], stdin?: string): ReturnType<typeof cliJson>;
}

/** Registers hooks that serve, for the enclosing suite, a keyplane with the tenant acme; returns how the suite runs `keyplane <command>` against it. */
export function useCli(command: string, options: TestServiceOptions = {}): CliSuite {
  const served = useServed("pglite", options);
  const run = (args: string[], env: Record<string, string | undefined> = {}, stdin = "") =>
    runCli([command, ...args], { KEYPLANE_URL: served().url, KEYPLANE_TOKEN: served().acme.keys.customer, ...env }, stdin);
  return { served, run, json: async (args, stdin) => cliJson(await run([...args, "-o", "json"], {}, stdin)) };
}
