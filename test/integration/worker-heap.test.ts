import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// A worker thread (the import's, src/import-worker.ts) under `npm start`'s V8 flags, which hold every
// heap's semi-spaces at 16 MiB: with the flags lifted while it starts (src/worker-heap.ts), its young
// generation is what its resource limits say, and the serving thread's stays as the flags made it.
const LIFTING = fileURLToPath(new URL("../../src/worker-heap.ts", import.meta.url));

const SCRIPT = `
import { Worker } from "node:worker_threads";
import v8 from "node:v8";
import { liftSemiSpaceFlags } from ${JSON.stringify(LIFTING)};
const newSpace = (spaces) => spaces.find((s) => s.space_name === "new_space").space_size / 2 ** 20;
const churn = (n) => { let keep = []; for (let i = 0; i < n; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 20000) keep = []; } };
const lift = process.argv[2] === "lift";
const restore = lift ? liftSemiSpaceFlags() : () => {};
const worker = new Worker(\`
  const { parentPort } = require("node:worker_threads");
  const v8 = require("node:v8");
  parentPort.postMessage("ready");
  let keep = []; for (let i = 0; i < 2e6; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 20000) keep = []; }
  parentPort.postMessage(v8.getHeapSpaceStatistics());
\`, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 } });
worker.on("message", (m) => {
  if (m === "ready") return restore();
  churn(4e6);
  console.log(JSON.stringify({ worker: newSpace(m), serving: newSpace(v8.getHeapSpaceStatistics()) }));
  process.exit(0);
});
`;

let dir: string;
let script: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "keyplane-import-worker-"));
  script = join(dir, "young.mjs");
  await writeFile(script, SCRIPT);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function run(mode: "lift" | "keep"): Promise<{ worker: number; serving: number }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--min-semi-space-size=16", "--max-semi-space-size=16", script, mode], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { worker: number; serving: number });
    });
  });
}

describe("a worker thread's young generation under npm start's flags", () => {
  it("is what its resource limits say, while the serving thread's keeps the flags' 32 MiB", { timeout: 60_000 }, async () => {
    const lifted = await run("lift");
    expect(lifted.worker).toBeLessThanOrEqual(8);
    expect(lifted.serving).toBe(32);
    // Without the lifting, the flags size the worker's too: what the lifting is for.
    const kept = await run("keep");
    expect(kept.worker).toBe(32);
  });
});
