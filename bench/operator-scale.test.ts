import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, inject, it } from "vitest";
import { buildEnvtestAssets } from "../test/support/envtest.ts";
import { describeKube, kubeTarget } from "../test/support/kube-suite.ts";

// `npm run bench:operator` at a tenth of its size, end to end, so that it cannot rot: it must finish,
// every ApiKey Ready and each with its Secret, and report its figures as numbers. Its targets (1,000
// ApiKeys Ready within 30 s, 256 MiB) are not asserted here: CI's machine is shared, and 100 ApiKeys
// say nothing of 1,000 (docs/operator.md, "Scale").
const repo = fileURLToPath(new URL("../", import.meta.url));
const COUNT = 100;

describeKube("npm run bench:operator -- --count 100", () => {
  const server = inject("postgresUrl");
  const target = kubeTarget();
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("applies the ApiKeys on its own control plane and writes every figure", { timeout: 240_000 }, async (ctx) => {
    ctx.skip(!server, "no PostgreSQL server reachable (set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432): the benchmark runs keyplane on one");
    ctx.skip(target.kind !== "envtest", "the benchmark starts a control plane of its own (envtest), not an existing cluster");
    if (target.kind === "envtest" && target.build) await buildEnvtestAssets();
    dir = await mkdtemp(join(tmpdir(), "keyplane-bench-operator-test-"));
    const out = join(dir, "operator-scale.json");
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ["bench/operator-scale.ts", "--count", String(COUNT), "--out", out],
        { cwd: repo, env: { ...process.env, DATABASE_URL: server! }, timeout: 230_000, maxBuffer: 16 * 2 ** 20 },
        (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
    expect(code, `bench:operator exited ${code}\n${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain("| all Ready, from the first create |");

    const result = JSON.parse(await readFile(out, "utf8")) as { count: number; median: Record<string, unknown> & { problems: string[] } };
    expect(result.count).toBe(COUNT);
    expect(result.median.problems).toEqual([]);
    for (const key of ["applyMs", "allReadyMs", "rssIdleMiB", "rssPeakMiB", "rssSettledMiB"]) {
      const value = result.median[key];
      expect(typeof value === "number" && Number.isFinite(value) && value > 0, `${key} = ${String(value)}`).toBe(true);
    }
  });
});
