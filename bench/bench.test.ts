import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, inject, it } from "vitest";
import { nginxMissing } from "../test/support/nginx.ts";
import { FIGURES } from "./report.ts";

// The benchmark in its short mode, end to end, so that it cannot rot: it must finish and report every
// figure as a number. Its targets are not asserted here (CI's machine is shared and the runs are short).
const repo = fileURLToPath(new URL("../", import.meta.url));

describe("npm run bench -- --short", () => {
  const server = inject("postgresUrl");
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs against PostgreSQL and writes every figure", { timeout: 240_000 }, async (ctx) => {
    ctx.skip(!server, "no PostgreSQL server reachable (set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432): the benchmark needs one");
    const noNginx = nginxMissing();
    ctx.skip(noNginx !== undefined, `${noNginx}: the benchmark puts a real nginx in front of keyplane`);
    dir = await mkdtemp(join(tmpdir(), "keyplane-bench-test-"));
    const out = join(dir, "short.json");
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ["bench/run.ts", "--short", "--out", out],
        { cwd: repo, env: { ...process.env, DATABASE_URL: server!, BENCH_SHORT: "" }, timeout: 230_000, maxBuffer: 16 * 2 ** 20 },
        (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
    expect(code, `bench exited ${code}\n${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain("| figure | measured | target | met |");

    const result = JSON.parse(await readFile(out, "utf8")) as {
      mode: string;
      problems: string[];
      figures: Record<string, { value: unknown; label: string }>;
      machine: { cpuCount: number };
      versions: { node: string; postgres: string };
    };
    expect(result.mode).toBe("short");
    expect(result.problems).toEqual([]);
    expect(result.machine.cpuCount).toBeGreaterThan(0);
    expect(result.versions.node).toBe(process.version);
    expect(result.versions.postgres).not.toBe("unknown");
    for (const { key } of FIGURES) {
      const value = result.figures[key]?.value;
      expect(typeof value === "number" && Number.isFinite(value), `figure ${key} = ${String(value)}`).toBe(true);
    }
  });
});
