import { describe, expect, it } from "vitest";
import { OUTCOME_INDEX } from "../../domain/analytics/usage.ts";
import { MAX_WAITING, UsageCounter } from "./usage-counter.ts";

const MINUTE = 60_000;
const at = (minute: number, second = 0) => minute * MINUTE + second * 1000;

describe("UsageCounter", () => {
  it("counts by lineage and minute, outcome by outcome, with the credits", () => {
    let now = at(100, 5);
    const counter = new UsageCounter(() => now);
    counter.count(7, OUTCOME_INDEX.valid, 2);
    counter.count(7, OUTCOME_INDEX.valid, 3);
    counter.count(7, OUTCOME_INDEX.rateLimited, 0);
    counter.count(9, OUTCOME_INDEX.expired, 0);
    now = at(101, 59);
    counter.count(7, OUTCOME_INDEX.forbidden, 0);
    expect(counter.pending).toBe(3);
    expect(counter.take()).toEqual({
      lineages: [7, 9, 7],
      minutes: [100, 100, 101],
      counts: [[2, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0], [5, 0, 0]],
    });
  });

  it("starts from zero after a take, in the same minute too", () => {
    const counter = new UsageCounter(() => at(5));
    counter.count(1, OUTCOME_INDEX.valid, 0);
    counter.take();
    expect(counter.take()).toBeUndefined();
    counter.count(1, OUTCOME_INDEX.valid, 0);
    expect(counter.take()?.counts[OUTCOME_INDEX.valid]).toEqual([1]);
  });

  it("keeps a batch given back, to go with the next, beside what was counted since", () => {
    const counter = new UsageCounter(() => at(5));
    counter.count(1, OUTCOME_INDEX.valid, 4);
    const failed = counter.take()!;
    counter.count(1, OUTCOME_INDEX.valid, 1);
    counter.giveBack(failed);
    expect(counter.pending).toBe(2);
    const next = counter.take()!;
    // The same key-minute twice: the write's statement sums them.
    expect(next.lineages).toEqual([1, 1]);
    expect(next.counts[OUTCOME_INDEX.valid]).toEqual([1, 1]);
    expect(next.counts.at(-1)).toEqual([4, 1]);
  });

  it("keeps at most MAX_WAITING key-minutes while writes fail, losing the oldest minutes first", () => {
    let now = at(0);
    const counter = new UsageCounter(() => now);
    const keys = MAX_WAITING / 4;
    for (let minute = 0; minute < 6; minute++) {
      now = at(minute);
      for (let k = 0; k < keys; k++) counter.count(k, OUTCOME_INDEX.valid, 0);
      // The fifth minute given back is one minute over: the first minute goes.
      if (minute < 5) expect(counter.giveBack(counter.take()!)).toBe(minute === 4 ? keys : 0);
    }
    expect(counter.pending).toBe(MAX_WAITING + keys);
    const batch = counter.take()!;
    expect(new Set(batch.minutes)).toEqual(new Set([1, 2, 3, 4, 5]));
  });
});
