import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// `keyplane serve` loads the operator, and the Kubernetes client with it, only where a cluster is
// configured (src/operator/launch.ts): no module that `serve` loads at start-up may import it.
const SRC = resolve(import.meta.dirname, "..");

/** What a module loads with it: its imports and re-exports, less `import type` and `await import()`. */
function staticImports(file: string): string[] {
  const source = readFileSync(file, "utf8");
  return [...source.matchAll(/^(?:import|export)(?! type )(?:[^;"]*? from)? "([^"]+)";/gm)].map((m) => m[1]!);
}

/** Every module loaded with `entry`: files followed, packages and node: builtins listed. */
function loadedWith(entry: string): Set<string> {
  const loaded = new Set<string>();
  const visit = (module: string) => {
    if (loaded.has(module)) return;
    loaded.add(module);
    if (!module.endsWith(".ts")) return;
    for (const target of staticImports(module)) visit(target.startsWith(".") ? join(dirname(module), target) : target);
  };
  visit(entry);
  return loaded;
}

describe("keyplane serve", () => {
  it("does not load the Kubernetes client at start-up", () => {
    const loaded = loadedWith(join(SRC, "cli/serve.ts"));
    // The walk reaches the operator's launcher and the packages behind the HTTP server.
    expect(loaded.has(join(SRC, "operator/launch.ts"))).toBe(true);
    expect(loaded.has("express")).toBe(true);
    expect([...loaded].filter((m) => m.startsWith("@kubernetes/") || m === join(SRC, "operator/start.ts"))).toEqual([]);
  });
});
