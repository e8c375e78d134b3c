import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The layers' arrows and the ban on import circles (docs/architecture.md) are dependency-cruiser's rules
// (.dependency-cruiser.js), run by `npm run lint`: here they are run, as lint runs them, on a planted tree
// of files that break them, and of files that keep them (the rooms analytics/ and import/ included).
const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");
const DEPCRUISE = join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");

/** Each planted file and what it imports; the imported files are planted too, empty. */
const REFUSED: [file: string, target: string, rule: string][] = [
  ["src/domain/a.ts", "../store/database.ts", "domain-is-pure"],
  ["src/domain/keys/b.ts", "../../services/keys/keys.ts", "domain-is-pure"],
  ["src/domain/policy/limits/c.ts", "../../../config.ts", "domain-is-pure"],
  ["src/store/keys/d.ts", "../../services/keys/keys.ts", "store-over-domain"],
  ["src/store/e.ts", "./../http/route.ts", "store-over-domain"],
  ["src/services/keys/f.ts", "../../http/route.ts", "services-over-store"],
  ["src/services/analytics/g.ts", "../../operator/reconcile/plan.ts", "services-over-store"],
  ["src/http/keys/h.ts", "../../store/keys/keys.ts", "http-not-store"],
  ["src/http/import/i.ts", "../../store/database.ts", "http-not-store"],
  ["src/operator/reconcile/j.ts", "../../store/database.ts", "operator-not-store"],
  ["src/runtime/k.ts", "../store/keys/keys.ts", "runtime-not-store"],
  ["src/cli/l.ts", "../store/migrate.ts", "cli-not-store"],
];
const KEPT: [file: string, target: string][] = [
  ["src/domain/policy/m.ts", "../scope/scope.ts"],
  ["src/store/analytics/n.ts", "../../domain/model.ts"],
  ["src/store/import/o.ts", "../database.ts"],
  ["src/services/import/p.ts", "../../store/keys/keys.ts"],
  ["src/services/analytics/q.ts", "../keys/keys.ts"],
  ["src/http/analytics/r.ts", "../../services/analytics/usage.ts"],
  ["src/operator/s.ts", "../domain/scope/scope.ts"],
  ["src/cli/t.ts", "../keyplane.ts"],
  ["src/keyplane.ts", "./store/pglite.ts"],
  ["src/http/u.test.ts", "../store/database.ts"],
];
// A circle of type imports only, across two rooms: still a circle.
const CIRCLE: [file: string, source: string][] = [
  ["src/services/keys/needs-x.ts", 'import type { Y } from "../policy/y.ts";\nexport interface X { y: Y }\n'],
  ["src/services/policy/y.ts", 'import type { X } from "../keys/needs-x.ts";\nexport interface Y { x?: X }\n'],
];

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

describe("the layers' arrows and the ban on circles", () => {
  let tree: string;
  let violations: Violation[];

  beforeAll(async () => {
    tree = await mkdtemp(join(tmpdir(), "keyplane-layers-"));
    const plant = async (file: string, source: string) => {
      await mkdir(join(tree, dirname(file)), { recursive: true });
      await writeFile(join(tree, file), source);
    };
    const planted = [...REFUSED, ...KEPT].map(([file, target]): [string, string] => [file, `import "${target}";\nexport {};\n`]);
    const targets = [...REFUSED, ...KEPT].map(([file, target]): [string, string] => [join(dirname(file), target), "export {};\n"]);
    for (const [file, source] of [...targets, ...planted, ...CIRCLE]) await plant(file, source);
    await writeFile(join(tree, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "nodenext", allowImportingTsExtensions: true, noEmit: true }, include: ["src"] }));
    const config = join(ROOT, ".dependency-cruiser.js");
    // It exits non-zero when it finds a violation: the report is what matters here.
    const result = await run(process.execPath, [DEPCRUISE, "src", "--config", config, "--output-type", "json"], { cwd: tree }).catch((e: { stdout: string }) => e);
    violations = (JSON.parse(result.stdout) as { summary: { violations: Violation[] } }).summary.violations;
  }, 60_000);
  afterAll(async () => {
    if (tree) await rm(tree, { recursive: true, force: true });
  });

  it.each(REFUSED)("%s may not import %s (%s)", (file, _target, rule) => {
    expect(violations.filter((v) => v.from === file).map((v) => v.rule.name)).toEqual([rule]);
  });

  it.each(KEPT)("%s may import %s", (file) => {
    expect(violations.filter((v) => v.from === file)).toEqual([]);
  });

  it("refuses a circle, of type imports too", () => {
    // Reported once, from one of its files.
    const circular = violations.filter((v) => v.rule.name === "no-circular");
    expect(circular).toHaveLength(1);
    expect(CIRCLE.map(([file]) => file)).toContain(circular[0]!.from);
  });
});
