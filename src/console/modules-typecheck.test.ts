import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

// The console's modules are plain JavaScript for the browser, outside the project's `tsc` (whose types
// are Node's): their JSDoc types are checked here, against the DOM's, by src/console/tsconfig.json.
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const PROJECT = fileURLToPath(new URL("./tsconfig.json", import.meta.url));

it("the console's browser modules type-check against the DOM", async () => {
  const run = await promisify(execFile)(process.execPath, [TSC, "-p", PROJECT, "--pretty", "false"]).catch((e: { stdout: string; code: number }) => e);
  expect("code" in run ? run.stdout : "").toBe("");
}, 60_000);
