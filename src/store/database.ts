// The one interface the rest of keyplane sees of PostgreSQL, whether reached through `pg` or
// embedded through PGlite.
export type Row = Record<string, unknown>;

export type ListenState = "lost" | "restored";

/** What to do with a NOTIFY payload, by channel. */
export type ChannelHandlers = Readonly<Record<string, (payload: string) => void>>;

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
   * Calls each channel's handler with each NOTIFY payload on that channel, all channels on one
   * connection (a process's connections are counted: docs/scaling.md). `onReset("lost")` says messages
   * may be missed from now on (the listening connection was lost, or stopped answering);
   * `onReset("restored")` that it listens again, and that what was sent meanwhile is gone for good.
   */
  listen(channels: ChannelHandlers, onReset?: (state: ListenState) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
