import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { statusOf, type ErrorCode } from "../domain/errors.ts";
import { BODY_LIMIT } from "./body.ts";
import { sendError } from "./errors.ts";

// The HTTP server around keyplane's handler: listening, the edges of HTTP/1.1 that Node handles before
// any handler (docs/api.md, "HTTP edges"), and a graceful stop. Every answer, also those, is the JSON
// error body; every request gets its own answer, in order, also on a pipelined connection.
export interface Listening {
  server: Server;
  url: string;
  /** Graceful stop: no new connections, requests in flight finish (up to `graceMs`), then it resolves. */
  close(graceMs?: number): Promise<void>;
}

export interface ServerOptions {
  /** The whole of a request's headers must arrive within this (10 s). */
  headersTimeoutMs?: number;
  /** The whole request, body included, must arrive within this (30 s). */
  requestTimeoutMs?: number;
}

export async function listen(app: RequestListener, port: number, host: string, options: ServerOptions = {}): Promise<Listening> {
  const { headersTimeoutMs = 10_000, requestTimeoutMs = 30_000 } = options;
  /** The answers each connection still owes, oldest first: a refusal of what follows waits for them. */
  const owed = new WeakMap<Socket | Duplex, Set<ServerResponse>>();

  const handle: RequestListener = (req, res) => {
    // Node's own check would answer an empty 400; this one answers the JSON body.
    if (req.httpVersion === "1.1" && req.headers.host === undefined) return refuse(res, "bad_request", "An HTTP/1.1 request needs a Host header.");
    let answers = owed.get(req.socket);
    if (!answers) owed.set(req.socket, (answers = new Set()));
    answers.add(res);
    res.once("close", () => answers.delete(res));
    app(req, res);
  };

  const server = createServer(
    {
      requireHostHeader: false,
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      // How often Node looks for requests over their time: the time-outs hold to within this.
      connectionsCheckingInterval: Math.max(25, Math.min(1_000, headersTimeoutMs / 5)),
      keepAliveTimeout: 65_000,
    },
    handle,
  );

  // A declared body over the limit is refused before the client sends it: no 100 Continue.
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers["content-length"]) > BODY_LIMIT) return refuse(res, "payload_too_large", "The request body is larger than 16 KiB.");
    res.writeContinue();
    handle(req, res);
  });

  // keyplane is no proxy: CONNECT gets an answer, then the connection closes.
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => {
    socket.end(raw("method_not_allowed", "CONNECT is not supported: keyplane is not a proxy."));
  });

  // What Node refuses before any handler: a bad request line or framing, headers over 16 KiB, a request
  // too slow to arrive. What the connection still owes for earlier requests is answered first.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const answers = [...(owed.get(socket) ?? [])];
    const waiting = answers.find((res) => !res.headersSent);
    if (timedOut && waiting) {
      // Its body never came in time: the request being read is the one that gets the 408.
      return refuse(waiting, "request_timeout", "The request body did not arrive within 30 s.", () => socket.destroy());
    }
    const [code, message]: [ErrorCode, string] = timedOut
      ? ["request_timeout", "The request headers did not arrive within 10 s."]
      : ["bad_request", "The request could not be read (malformed, or headers over 16 KiB)."];
    void Promise.all(answers.map(finished)).then(() => {
      if (socket.writable) socket.end(raw(code, message));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shown}:${address.port}`,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        // Keep-alive connections go as soon as they are idle, those in flight once answered; whatever
        // is still open after the grace period is cut.
        const reap = setInterval(() => server.closeIdleConnections(), 50);
        const force = setTimeout(() => server.closeAllConnections(), graceMs).unref();
        server.close(() => {
          clearInterval(reap);
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/** Answers with the JSON error and closes the connection after it. */
function refuse(res: ServerResponse, code: ErrorCode, message: string, then?: () => void): void {
  res.shouldKeepAlive = false;
  if (then) res.once("finish", then);
  sendError(res, code, message);
}

/** A whole answer, written straight to a socket (where Node gives no response object). */
function raw(code: ErrorCode, message: string): string {
  const status = statusOf(code);
  const body = JSON.stringify({ status, error: code, message });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function finished(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.writableFinished || res.destroyed) return resolve();
    res.once("finish", () => resolve());
    res.once("close", () => resolve());
  });
}
