import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// deploy/monitoring's alerting rules, checked and unit-tested by Prometheus's own promtool (Debian's
// prometheus package). Under CI a missing promtool fails rather than skips.
const run = promisify(execFile);
const PROMTOOL = "/usr/bin/promtool";
const DIR = join(import.meta.dirname, "../../deploy/monitoring");

describe.skipIf(!existsSync(PROMTOOL) && !process.env.CI)("deploy/monitoring/keyplane-rules.yaml (promtool)", () => {
  it("is a valid rules file", async () => {
    const { stdout } = await run(PROMTOOL, ["check", "rules", "keyplane-rules.yaml"], { cwd: DIR });
    expect(stdout).toContain("SUCCESS: 7 rules found");
  });

  it("fires each alert when it should and not before (rules-test.yaml)", async () => {
    const { stdout } = await run(PROMTOOL, ["test", "rules", "rules-test.yaml"], { cwd: DIR });
    expect(stdout).toContain("SUCCESS");
  });
});
