import { createHook } from "node:async_hooks";

// process.nextTick queues each callback in an object literal whose first keys are symbols. V8 holds
// the shape (map) such literals start from only weakly: a full collection at a moment when no tick is
// queued frees the whole chain of shapes, the ticks after it get new ones, and Node's code compiled
// for the old shapes then builds every tick through V8's runtime, several times slower. Every request
// takes half a dozen ticks. One entry kept alive keeps its shapes, and the ticks after it share them
// (docs/adr/0010-tick-shape.md).
let kept: object | undefined;

const noop = () => {};

/**
 * Keeps one entry of nextTick's queue for the life of the process (a tick that does nothing), and
 * returns it; undefined if Node no longer reports its ticks to async hooks as "TickObject".
 */
export function keepTickShape(): object | undefined {
  if (kept) return kept;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource: object) {
      if (type === "TickObject") kept ??= resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return kept;
}
