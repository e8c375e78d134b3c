import type { ServerResponse } from "node:http";

/** Waits until a streamed response can take more; false if the connection closed first. */
export function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const done = (ok: boolean) => {
      res.off("drain", onDrain).off("close", onClose);
      resolve(ok);
    };
    res.on("drain", onDrain).on("close", onClose);
  });
}
