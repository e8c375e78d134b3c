// The verification path answers in the turn of the request that asks, when its caches know the
// answer: each step returns its value at once, or a promise when it had to ask the database. Awaiting
// every step instead cost a microtask and a promise per step, about a twentieth of an answer
// (docs/adr/0004-self-fast-path.md).

/** A value now, or later when the database had to be asked. */
export type Maybe<T> = T | Promise<T>;

/** `next` on the value: at once when it is there, once it is otherwise. */
export function after<T, U>(value: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** Runs `run`; an error it throws, or its promise rejects with, goes to `fail`. */
export function runNowOrLater(run: () => Maybe<void>, fail: (error: unknown) => void): void {
  let later: Maybe<void>;
  try {
    later = run();
  } catch (error) {
    return fail(error);
  }
  if (later instanceof Promise) later.catch(fail);
}
