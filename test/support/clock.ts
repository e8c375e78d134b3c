// A clock that moves only when a test moves it: expiry and grace periods are tested to the second
// without waiting for them.
export interface FakeClock {
  /** What keyplane is given as its clock. */
  clock: () => Date;
  now(): Date;
  set(time: Date | string): void;
  advance(ms: number): void;
}

export function fakeClock(start: Date | string = "2026-11-23T10:00:00.000Z"): FakeClock {
  let ms = new Date(start).getTime();
  return {
    clock: () => new Date(ms),
    now: () => new Date(ms),
    set: (time) => void (ms = new Date(time).getTime()),
    advance: (by) => void (ms += by),
  };
}
