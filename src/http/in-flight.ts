import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

// What each connection is doing: the answers it still owes, oldest first, and the request it read
// last. Node reports a malformed or late request (its 'clientError') while the answers to the requests
// before it on the same connection may still be on their way; whatever keyplane writes then must wait
// behind them, or it would take their place (docs/api.md, "HTTP edges").
const STATE = Symbol("keyplane.inFlight");

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
}

interface Connection {
  owed: ServerResponse[];
  /** Called, once each, when nothing is owed. */
  whenSettled: (() => void)[];
  /** Until it has been read in full and answered: a request read in full matters no more here. */
  latest: Exchange | undefined;
}

type Tracked = Socket & { [STATE]?: Connection };

/** Counts `res` as owed on its connection until it has been written in full, or abandoned. */
export function owe(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as Tracked;
  const connection = (socket[STATE] ??= { owed: [], whenSettled: [], latest: { req, res } });
  connection.latest = { req, res };
  connection.owed.push(res);
  // A response closes once written in full (right after 'finish'), or abandoned: one listener, on every request.
  res.on("close", () => settle(connection, res));
}

function settle(connection: Connection, res: ServerResponse): void {
  // Let go of the exchange once it is over, rather than when the connection's next request comes:
  // kept, every open connection's last request and response survived each minor collection (a
  // quarter of a megabyte copied each time under load, docs/adr/0012).
  if (connection.latest?.res === res && connection.latest.req.complete) connection.latest = undefined;
  const { owed, whenSettled } = connection;
  const at = owed.indexOf(res);
  if (at < 0) return;
  // Mostly the only one owed: pop() then, which splice() costs several times.
  if (at === owed.length - 1) owed.pop();
  else owed.splice(at, 1);
  if (owed.length > 0 || whenSettled.length === 0) return;
  for (const then of whenSettled.splice(0)) then();
}

/** The request read last on the connection, with its answer, if any was read. */
export function latestExchange(socket: Socket): Exchange | undefined {
  return (socket as Tracked)[STATE]?.latest;
}

/** Runs `then` once every answer owed on the connection has been written (at once if none is). */
export function afterOwed(socket: Socket, then: () => void): void {
  const connection = (socket as Tracked)[STATE];
  if (!connection || connection.owed.length === 0) then();
  else connection.whenSettled.push(then);
}
