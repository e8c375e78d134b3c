import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { keepTickShape } from "./tick-shape.ts";

// The kept tick must outlive full collections that run while nothing else is queued, and the ticks
// queued after them must share its shape (docs/adr/0010-tick-shape.md). V8's own %HaveSameMap tells,
// in a process of its own started with --allow-natives-syntax and --expose-gc.
const probe = `
import { createHook } from "node:async_hooks";
const { keepTickShape } = await import(${JSON.stringify(new URL("./tick-shape.ts", import.meta.url).href)});
const lastTick = () => {
  let tick;
  const hook = createHook({ init(_id, type, _trigger, resource) { if (type === "TickObject") tick = resource; } }).enable();
  process.nextTick(() => {});
  hook.disable();
  return tick;
};
// Held weakly here: only keepTickShape keeps it.
const first = new WeakRef(keepTickShape());
await new Promise((resolve) => setTimeout(resolve, 10));
gc();
gc();
await new Promise((resolve) => setTimeout(resolve, 10));
const kept = keepTickShape();
console.log(JSON.stringify({ retained: kept !== undefined && first.deref() === kept, sameShape: %HaveSameMap(kept, lastTick()) }));
`;

describe("keepTickShape", () => {
  it("keeps one of nextTick's entries, the same one on every call", () => {
    const kept = keepTickShape() as { callback?: unknown } | undefined;
    expect(typeof kept?.callback).toBe("function");
    expect(keepTickShape()).toBe(kept);
  });

  it("keeps the shape of the ticks queued after full collections", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--allow-natives-syntax", "--expose-gc", "--input-type=module", "-e", probe]);
    expect(JSON.parse(stdout)).toEqual({ retained: true, sameShape: true });
  });
});
