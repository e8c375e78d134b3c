import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, describe, expect, it } from "vitest";
import { HEALTH_LUA, haveLua, luaLiteral, runArgoHealth } from "../support/argocd.ts";

// deploy/argocd/health.lua against its fixtures, in a real Lua 5.1 (Argo CD's VM version), read from
// health_test.yaml in Argo CD's own layout. Under CI a missing lua5.1 fails rather than skips.
const DIR = join(import.meta.dirname, "../../deploy/argocd");
const cases = (load(await readFile(join(DIR, "health_test.yaml"), "utf8")) as {
  tests: { healthStatus: { status: string; message: string }; inputPath: string }[];
}).tests;
const skip = !haveLua() && !process.env.CI;

describe.skipIf(skip)("the Argo CD health check for ApiKey (lua5.1)", () => {
  it.each(cases)("$inputPath is $healthStatus.status", async ({ healthStatus, inputPath }) => {
    const obj = load(await readFile(join(DIR, inputPath), "utf8"));
    expect(await runArgoHealth(obj)).toEqual(healthStatus);
  });

  it("covers each status Argo CD shows for an ApiKey", () => {
    expect(new Set(cases.map((c) => c.healthStatus.status))).toEqual(new Set(["Healthy", "Progressing", "Degraded"]));
  });

  const scratch = mkdtemp(join(tmpdir(), "keyplane-argocd-"));
  afterAll(async () => rm(await scratch, { recursive: true, force: true }));

  it("fails the fixtures when the script is broken (the harness can see a wrong answer)", async () => {
    const broken = join(await scratch, "health.lua");
    await writeFile(broken, (await readFile(HEALTH_LUA, "utf8")).replace('health("Degraded"', 'health("Healthy"'));
    const obj = load(await readFile(join(DIR, "testdata/degraded-key-conflict.yaml"), "utf8"));
    expect((await runArgoHealth(obj, broken)).status).toBe("Healthy");
  });

  it("passes strings through byte for byte, beyond ASCII and with quotes and backslashes", async () => {
    const message = 'Key "XI…7798" \\ retired';
    const obj = { metadata: { generation: 1 }, status: { observedGeneration: 1, conditions: [{ type: "Ready", status: "True", reason: "Provisioned", message, observedGeneration: 1 }] } };
    expect(await runArgoHealth(obj)).toEqual({ status: "Healthy", message: `Provisioned: ${message}` });
    expect(luaLiteral({ a: null, b: [1, true] })).toBe('{["b"] = {1, true}}');
  });
});

describe("deploy/argocd/argocd-cm.yaml", () => {
  it("embeds health.lua unchanged", async () => {
    const cm = load(await readFile(join(DIR, "argocd-cm.yaml"), "utf8")) as { data: Record<string, string> };
    expect(cm.data["resource.customizations.health.keyplane.dev_ApiKey"]).toBe(await readFile(HEALTH_LUA, "utf8"));
  });
});
