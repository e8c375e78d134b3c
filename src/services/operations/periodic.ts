import type { Logger } from "pino";

// A job run every `intervalMs` on each process, off any request's path: never two runs at once, and
// a failure is logged and tried again next time. Timers do not keep the process alive.
export interface Periodic {
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

export function every(intervalMs: number, job: () => Promise<unknown>, log: Logger, what: string): Periodic {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= job()
      .then(
        () => undefined,
        (error: unknown) => log.warn({ err: error }, `${what} failed; will retry`),
      )
      .finally(() => (running = undefined));
  };
  const timer = setInterval(run, intervalMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
