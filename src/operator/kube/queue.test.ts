import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backoffDelay, WorkQueue, type ProcessResult } from "./queue.ts";

/** A process function whose calls the test resolves one by one. */
function controlled() {
  const calls: Array<{ key: string; at: number; finish: (outcome: ProcessResult | Error) => void }> = [];
  let running = 0;
  let maxRunning = 0;
  const process = (key: string) =>
    new Promise<ProcessResult>((resolve, reject) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      calls.push({
        key,
        at: Date.now(),
        finish: (outcome) => {
          running--;
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      });
    });
  return { calls, process, maxRunning: () => maxRunning, keys: () => calls.map((c) => c.key) };
}

const backoff = { baseMs: 100, maxMs: 1_000 };

describe("WorkQueue", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("processes a key added several times while it waits only once", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    queue.add("a");
    queue.add("b");
    queue.add("b");
    queue.add("b");
    work.calls[0]!.finish("done");
    await vi.advanceTimersByTimeAsync(0);
    work.calls[1]!.finish("done");
    await queue.idle();
    expect(work.keys()).toEqual(["a", "b"]);
  });

  it("never processes one key on two workers at once, and runs it again when added meanwhile", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 4, backoff, process: work.process });
    queue.add("a");
    queue.add("a");
    expect(work.keys()).toEqual(["a"]);
    queue.add("a"); // while "a" is processed
    queue.add("a");
    expect(work.keys()).toEqual(["a"]);
    work.calls[0]!.finish("done");
    await vi.advanceTimersByTimeAsync(0);
    expect(work.keys()).toEqual(["a", "a"]);
    work.calls[1]!.finish("done");
    await queue.idle();
    expect(work.maxRunning()).toBe(1);
  });

  it("processes different keys side by side, up to its concurrency", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 2, backoff, process: work.process });
    for (const key of ["a", "b", "c", "d"]) queue.add(key);
    expect(work.keys()).toEqual(["a", "b"]);
    work.calls[1]!.finish("done");
    await vi.advanceTimersByTimeAsync(0);
    expect(work.keys()).toEqual(["a", "b", "c"]);
    work.calls[0]!.finish("done");
    work.calls[2]!.finish("done");
    await vi.advanceTimersByTimeAsync(0);
    work.calls[3]!.finish("done");
    await queue.idle();
    expect(work.maxRunning()).toBe(2);
  });

  it("retries a key after an exponential backoff, capped, until it succeeds; then starts over", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    const start = Date.now();
    queue.add("a");
    for (let i = 0; i < 6; i++) {
      await vi.advanceTimersToNextTimerAsync();
      work.calls[i]!.finish("retry");
      await vi.advanceTimersByTimeAsync(0);
    }
    await vi.advanceTimersToNextTimerAsync();
    const gaps = work.calls.slice(1).map((c, i) => c.at - work.calls[i]!.at);
    expect(gaps).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(queue.failures("a")).toBe(6);

    work.calls[6]!.finish("done");
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.failures("a")).toBe(0);
    queue.add("a");
    work.calls[7]!.finish("retry");
    await vi.advanceTimersByTimeAsync(99);
    expect(work.calls).toHaveLength(8);
    await vi.advanceTimersByTimeAsync(1);
    expect(work.calls).toHaveLength(9);
    expect(start).toBeLessThan(work.calls[8]!.at);
  });

  it("reports what processing threw, and retries the key after its backoff", async () => {
    const work = controlled();
    const errors: Array<[string, unknown]> = [];
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process, onError: (key, error) => errors.push([key, error]) });
    queue.add("a");
    const boom = new Error("API server said 500");
    work.calls[0]!.finish(boom);
    await vi.advanceTimersByTimeAsync(100);
    expect(errors).toEqual([["a", boom]]);
    expect(work.keys()).toEqual(["a", "a"]);
  });

  it("keeps the earliest due time of delayed adds, and an add now supersedes them", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    queue.addAfter("a", 500);
    queue.addAfter("a", 200);
    queue.addAfter("a", 900);
    await vi.advanceTimersByTimeAsync(199);
    expect(work.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(work.keys()).toEqual(["a"]);
    work.calls[0]!.finish("done");
    await vi.advanceTimersByTimeAsync(2_000);
    expect(work.keys()).toEqual(["a"]);

    queue.addAfter("b", 300);
    queue.add("b");
    work.calls[1]!.finish("done");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(work.keys()).toEqual(["a", "b"]);
  });

  it("comes back after the delay a key asks for, and forgets its failures", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    queue.add("a");
    work.calls[0]!.finish("retry");
    await vi.advanceTimersByTimeAsync(100);
    expect(queue.failures("a")).toBe(1);
    work.calls[1]!.finish({ requeueAfterMs: 5_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.failures("a")).toBe(0);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(work.keys()).toEqual(["a", "a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(work.keys()).toEqual(["a", "a", "a"]);
  });

  it("waits the longest a timer can for a delay beyond it, rather than firing at once", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    queue.addAfter("a", 30 * 86_400_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(work.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(2 ** 31 - 1_001);
    expect(work.keys()).toEqual(["a"]);
  });

  it("stops: drops what waits and what is scheduled, and waits for the work in flight", async () => {
    const work = controlled();
    const queue = new WorkQueue({ concurrency: 1, backoff, process: work.process });
    queue.add("a");
    queue.add("b");
    queue.addAfter("c", 50);
    let stopped = false;
    const stopping = queue.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    work.calls[0]!.finish("retry");
    await stopping;
    await vi.advanceTimersByTimeAsync(1_000);
    queue.add("d");
    expect(work.keys()).toEqual(["a"]);
  });
});

describe("backoffDelay", () => {
  it.each([
    [1, 100],
    [2, 200],
    [3, 400],
    [5, 1_000],
    [40, 1_000],
  ])("after %i failures in a row waits %i ms", (failures, ms) => {
    expect(backoffDelay(failures, backoff)).toBe(ms);
  });

  it("adds at most the jitter fraction", () => {
    expect(backoffDelay(1, { ...backoff, jitter: 0.2 }, () => 0.999)).toBe(120);
    expect(backoffDelay(1, { ...backoff, jitter: 0.2 }, () => 0)).toBe(100);
  });
});
