import { setFlagsFromString } from "node:v8";

// `npm start` holds the young generation's semi-spaces at 16 MiB (docs/adr/0011) with V8 flags, which
// are the process's: a worker thread's heap would take them too, over its own `resourceLimits`, 32 MiB
// of young generation where a few MiB serve (docs/adr/0018).
const SEMI_SPACE_FLAGS = process.execArgv.filter((arg) => /^--(min|max)[-_]semi[-_]space[-_]size=/.test(arg));

/**
 * Lifts the process's semi-space flags until the returned function puts them back: a worker thread
 * started meanwhile sizes its young generation by its resource limits. Put them back once the worker
 * says it runs (its heap is made by then); the serving thread's heap, made long before, keeps its size.
 */
export function liftSemiSpaceFlags(): () => void {
  for (const flag of SEMI_SPACE_FLAGS) setFlagsFromString(`${flag.split("=")[0]}=0`);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    for (const flag of SEMI_SPACE_FLAGS) setFlagsFromString(flag);
  };
}
