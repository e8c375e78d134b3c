import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The console's rooms (docs/adr/0015-console.md): what each room's modules may import, checked, so
// that the rule its entry file states is kept rather than hoped for.
const PUBLIC = fileURLToPath(new URL("./public/", import.meta.url));

/** Each room, and the rooms its modules may import besides their own. */
const MAY_USE: Record<string, string[]> = {
  ".": ["shared", "keys", "events", "webhooks", "analytics"],
  keys: ["shared", "events", "analytics"],
  analytics: ["shared"],
  events: ["shared"],
  webhooks: ["shared"],
  shared: [],
};

const modules = readdirSync(PUBLIC, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".js"));

/** The modules a module imports ("shared/api.js"), its JSDoc type imports included. */
function importsOf(module: string): string[] {
  const text = readFileSync(join(PUBLIC, module), "utf8");
  return [...text.matchAll(/(?:from |import\()"(\.{1,2}\/[^"]+)"/g)].map((m) => normalize(join(dirname(module), m[1]!)));
}

describe("the console's rooms", () => {
  it("hold every module", () => {
    expect(modules.map((m) => dirname(m)).filter((room) => !(room in MAY_USE))).toEqual([]);
  });

  it.each(modules)("%s imports only from its own room and those its room may use", (module) => {
    const own = dirname(module);
    const allowed = new Set([own, ...MAY_USE[own]!]);
    expect(importsOf(module).filter((imported) => !allowed.has(dirname(imported)))).toEqual([]);
  });

  it("import nothing from main.js, the shell", () => {
    expect(modules.filter((module) => importsOf(module).includes("main.js"))).toEqual([]);
  });
});
