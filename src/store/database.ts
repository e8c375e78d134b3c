// The one interface the rest of keyplane sees of PostgreSQL, whether reached through `pg` or
// embedded through PGlite.
export type Row = Record<string, unknown>;

export type ListenState = "lost" | "restored";

/** What to do with a NOTIFY payload, by channel. */
export type ChannelHandlers = Readonly<Record<string, (payload: string) => void>>;

/**
 * The record behind a channel's announcements, read on the listening connection itself: after each
 * LISTEN (before `onReset("restored")`), and at a check of the connection after an announcement or
 * while it `wanted()` a read, so that what the announcements missed while nobody listened is
 * delivered all the same (docs/adr/0014). `read` throws when the connection fails (the listener then
 * counts it lost).
 */
export interface CatchUp {
  read(q: Queryable): Promise<void>;
  /** Whether it needs a read though nothing was announced (it has no floor yet). */
  wanted(): boolean;
  /** The connection it read on is gone: the next read is on another, perhaps to another server. */
  lost(): void;
}

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
   * `onReset("restored")` that it listens again, and that what was sent meanwhile is gone for good,
   * but for what `catchUp` has read and delivered first. `purpose` names a listener that is not the
   * process's own (the webhook sender's) in its session's application_name, so the two are told apart.
   */
  listen(channels: ChannelHandlers, onReset?: (state: ListenState) => void, catchUp?: CatchUp, purpose?: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
