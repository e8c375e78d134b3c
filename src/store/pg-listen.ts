import pg from "pg";
import type { Logger } from "pino";
import { errorFields } from "../domain/errors.ts";
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
 * LISTEN to every channel on one dedicated connection to the primary, checked every `checkMs` with a
 * statement bounded by `timeoutMs` (the catch-up's read, when there is one): a connection that errors,
 * or stops answering without closing (a partition), is lost. Reported at once, then tried again every
 * `checkMs`, on whichever host is the primary then, until the database answers: as soon as it is back,
 * listening is too. What was announced meanwhile is gone for good, but for what the catch-up reads
 * from its record before "restored" is reported.
 */
export async function listenWithReconnect(options: ListenOptions): Promise<() => Promise<void>> {
  const { primary, channels, onReset, catchUp, log, timeoutMs, checkMs, name, options: settings } = options;
  const names = Object.keys(channels);
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

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
    const next = await primary.connect({ application_name: name, options: settings, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
    next.on("notification", (message) => {
      if (Object.hasOwn(channels, message.channel)) channels[message.channel]!(message.payload ?? "");
    });
    next.on("error", (error) => {
      if (client === next) lose(error);
    });
    try {
      for (const channel of names) await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      // Listening first, then reading: what commits after the read is announced, what committed before is in it.
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
      const check = catchUp ? catchUp.read(on(checked)) : checked.query("SELECT 1");
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
