import pg from "pg";
import type { Logger } from "pino";
import { errorFields, StoreUnavailable } from "../domain/errors.ts";
import type { CatchUp, ChannelHandlers, ListenState, Queryable } from "./database.ts";
import { translated } from "./errors.ts";
import type { PrimaryPool } from "./pg-primary.ts";

export interface ListenOptions {
  primary: PrimaryPool;
  channels: ChannelHandlers;
  onReset?: ((state: ListenState) => void) | undefined;
  catchUp?: CatchUp | undefined;
  log: Logger;
  timeoutMs: number;
  checkMs: number;
  /** The connection's application_name. */
  name: string;
  /** The session's settings (the connection's `options`). */
  options: string;
}

/**
 * LISTEN to every channel on one dedicated connection to the primary, checked every `checkMs` by a
 * round trip bounded by `timeoutMs`: a connection that errors, or stops answering without closing (a
 * partition), is lost. Reported at once, then tried again every `checkMs`, on whichever host is the
 * primary then, until the database answers: as soon as it is back, listening is too. What was
 * announced meanwhile is gone for good, but for what the catch-up reads from its record before
 * "restored" is reported.
 *
 * The check costs the server no transaction: it is the protocol's Sync alone, which PostgreSQL answers
 * with ReadyForQuery without starting one (and after sending the notifications it holds for the
 * session). The catch-up reads its record only when it may have something to say: after LISTEN, when
 * an announcement arrived since its last read, and while it has no floor yet (docs/adr/0014). An idle
 * process so commits nothing for its listener (docs/scaling.md, "What an idle process costs").
 */
export async function listenWithReconnect(options: ListenOptions): Promise<() => Promise<void>> {
  const { primary, channels, onReset, catchUp, log, timeoutMs, checkMs, name, options: settings } = options;
  const names = Object.keys(channels);
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** An announcement arrived since the catch-up's last read: it reads at the next check. */
  let announced = false;

  // The listener's own statements are not in the SQL log (sql-log.ts), as its checks never were: one
  // every `checkMs` would drown the statements that requests cost. They are prepared, as the pool's
  // are (postgres.ts), and planned at each execution (`settings`: the record they read grows too fast
  // for a plan kept from its first read).
  const prepared = new Map<string, string>();
  const named = (text: string): string => {
    let name = prepared.get(text);
    if (name === undefined) prepared.set(text, (name = `keyplane_listen_${prepared.size + 1}`));
    return name;
  };
  const on = (c: pg.Client): Queryable => ({
    query: (text, params) => translated(async () => (await c.query({ name: named(text), text, values: params as unknown[] | undefined })).rows),
    exec: (script) => translated(async () => void (await c.query(script))),
  });

  const connect = async (): Promise<pg.Client> => {
    const next = await primary.connect({ application_name: name, options: settings, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, keepAlive: true });
    next.on("notification", (message) => {
      announced = true;
      if (Object.hasOwn(channels, message.channel)) channels[message.channel]!(message.payload ?? "");
    });
    next.on("error", (error) => {
      if (client === next) lose(error);
    });
    try {
      for (const channel of names) await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      // Listening first, then reading: what commits after the read is announced, what committed before is in it.
      announced = false;
      await catchUp?.read(on(next));
      return next;
    } catch (error) {
      next.end().catch(() => undefined);
      throw error;
    }
  };

  const lose = (error: unknown): void => {
    const lost = client;
    client = undefined;
    lost?.end().catch(() => undefined);
    catchUp?.lost();
    if (stopped) return;
    log.warn({ err: errorFields(error), channels: names }, "notification connection lost");
    onReset?.("lost");
  };

  // One loop: while listening, check the connection (reading the record, if any); while not, try to listen again.
  const tick = async (): Promise<void> => {
    if (stopped) return;
    if (client) {
      const checked = client;
      const reads = catchUp !== undefined && (announced || catchUp.wanted());
      announced = false;
      const check = reads ? catchUp.read(on(checked)) : ping(checked, timeoutMs);
      // Lost already if its 'error' came first: then it is not lost twice.
      await check.catch((error: unknown) => {
        if (client === checked) lose(error);
      });
    } else {
      try {
        const next = await connect();
        if (stopped) return void next.end().catch(() => undefined);
        client = next;
        log.info({ channels: names }, "notification connection restored");
        onReset?.("restored");
      } catch {
        // Still unreachable, or no primary yet: the next tick tries again.
      }
    }
    if (!stopped) timer = setTimeout(() => void tick(), checkMs);
  };

  client = await connect();
  timer = setTimeout(() => void tick(), checkMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await client?.end().catch(() => undefined);
  };
}

/** What a ping needs of pg's connection: its Sync message and the ReadyForQuery that answers it. */
interface Wire {
  sync(): void;
  once(event: "readyForQuery", listener: () => void): unknown;
  off(event: "readyForQuery", listener: () => void): unknown;
}

/**
 * One round trip on an idle connection without a transaction: a Sync, answered by ReadyForQuery (an
 * empty query or `SELECT 1` would each commit one). Only while nothing else is sent on the connection:
 * the listener's loop sends one thing at a time. Rejects after `timeoutMs` without an answer.
 */
export function ping(client: pg.Client, timeoutMs: number): Promise<void> {
  const wire = client.connection as unknown as Wire;
  return new Promise((resolve, reject) => {
    const answered = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      wire.off("readyForQuery", answered);
      reject(new StoreUnavailable("timeout"));
    }, timeoutMs);
    wire.once("readyForQuery", answered);
    wire.sync();
  });
}
