import { join } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

// The folders' arrows (docs/architecture.md) are a lint rule: an import against them fails `npm run lint`.
const ROOT = join(import.meta.dirname, "../..");
const eslint = new ESLint({ cwd: ROOT });

async function restricted(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("the layers' import rules", () => {
  it.each([
    ["src/domain/x.ts", "../store/database.ts"],
    ["src/domain/x.ts", "../services/context.ts"],
    ["src/domain/x.ts", "../config.ts"],
    ["src/domain/policy/x.ts", "../../store/database.ts"],
    ["src/store/x.ts", "../services/keys.ts"],
    ["src/store/x.ts", "../http/route.ts"],
    ["src/services/x.ts", "../http/route.ts"],
    ["src/services/x.ts", "../operator/plan.ts"],
    ["src/http/x.ts", "../store/keys.ts"],
    ["src/operator/x.ts", "../store/database.ts"],
    ["src/runtime/x.ts", "../store/keys.ts"],
    ["src/cli/x.ts", "../store/migrate.ts"],
  ])("%s may not import %s", async (file, target) => {
    expect(await restricted(file, `import "${target}";\n`)).toHaveLength(1);
  });

  it.each([
    ["src/domain/x.ts", "./scope.ts"],
    ["src/domain/policy/x.ts", "../platform-path.ts"],
    ["src/store/x.ts", "../domain/model.ts"],
    ["src/services/x.ts", "../store/keys.ts"],
    ["src/services/x.ts", "../domain/scope.ts"],
    ["src/http/x.ts", "../services/keys.ts"],
    ["src/operator/x.ts", "../domain/scope.ts"],
    ["src/cli/x.ts", "../keyplane.ts"],
    ["src/keyplane.ts", "./store/pglite.ts"],
  ])("%s may import %s", async (file, target) => {
    expect(await restricted(file, `import "${target}";\n`)).toEqual([]);
  });
});
