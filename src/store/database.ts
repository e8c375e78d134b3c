// The one interface the rest of keyplane sees of PostgreSQL, whether reached through `pg` or
// embedded through PGlite.
export type Row = Record<string, unknown>;

export interface Queryable {
  /** One parameterised statement. */
  query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]>;
  /** A script of several statements, no parameters (migrations). */
  exec(script: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: "postgres" | "pglite";
  /** Runs `work` on one connection between BEGIN and COMMIT; ROLLBACK when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls `onMessage` with each NOTIFY payload on `channel`. `onReset` is called whenever messages may
   * have been missed (the listening connection was lost and has been re-established).
   */
  listen(channel: string, onMessage: (payload: string) => void, onReset?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
