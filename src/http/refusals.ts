import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { statusOf, type ErrorCode } from "../domain/errors.ts";
import { bodyLimitOf, limitText } from "./body.ts";
import { errorBody, sendError } from "./errors.ts";
import { afterOwed, latestExchange } from "./in-flight.ts";

// The requests Node refuses before any handler runs (docs/api.md, "HTTP edges"), answered with the
// same JSON error body as every other error, in their turn on the connection, which then closes.

/** Node's error for a request that could not be read, as the catalogue's code and a message. */
function clientErrorAnswer(error: NodeJS.ErrnoException): [ErrorCode, string] {
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return ["request_timeout", "The request did not arrive in time: its headers, or the whole of it, took too long."];
    case "HPE_HEADER_OVERFLOW":
      return ["bad_request", "The request's headers are over 16 KiB."];
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return ["payload_too_large", "The request's chunk extensions are too large."];
    default:
      return ["bad_request", "The request could not be read: it is not well-formed HTTP/1.1."];
  }
}

/** Connections whose failure has been answered: Node reports it again as more bytes arrive. */
const answered = new WeakSet<Socket>();

/**
 * Node's 'clientError': a request that is malformed, too large or too slow. When it is the request
 * being read (its body is what failed or is late), it gets the answer as its own response, or, if it
 * was answered already, no second one; otherwise the answer is written on the connection once the
 * answers to the requests before it have gone. Then the connection closes: after a framing error
 * nothing more on it can be read.
 */
export function onClientError(error: NodeJS.ErrnoException, duplex: Duplex): void {
  const socket = duplex as Socket;
  if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
  if (answered.has(socket)) return;
  answered.add(socket);
  const [code, message] = clientErrorAnswer(error);
  const reading = latestExchange(socket);
  if (reading && !reading.req.complete) {
    // The handler still reading that body learns it will never come once the connection has closed
    // (destroying the request sooner would cut its answer short).
    socket.once("close", () => reading.req.destroy());
    if (reading.res.headersSent) return afterOwed(socket, () => socket.destroySoon());
    reading.res.shouldKeepAlive = false;
    return sendError(reading.res, code, message);
  }
  afterOwed(socket, () => answerOnSocket(socket, code, message));
}

/** CONNECT asks keyplane to be a proxy, which it is not. */
export function onConnect(_req: IncomingMessage, duplex: Duplex): void {
  // A 405 must say what is allowed; CONNECT names a host rather than a resource, so this is every
  // method keyplane serves anywhere.
  answerOnSocket(duplex as Socket, "method_not_allowed", "CONNECT is not allowed: keyplane is not a proxy.", "Allow: GET, POST, PUT, DELETE\r\n");
}

/**
 * A request Node hands over but HTTP/1.1 refuses: one without Host (RFC 9112, 3.2). Node's own check
 * answers 400 with no body, so it is turned off and made here. True when the request was answered.
 */
export function refusedRequest(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.httpVersion !== "1.1" || req.headers.host !== undefined) return false;
  res.shouldKeepAlive = false;
  sendError(res, "bad_request", "An HTTP/1.1 request needs a Host header.");
  return true;
}

/**
 * `Expect: 100-continue`: a declared body over the limit is refused at once, without 100, so the
 * client need not send it (Node then closes the connection, since the body may follow anyway); any
 * other request is told to go on.
 */
export function continueOrRefuse(req: IncomingMessage, res: ServerResponse): boolean {
  const limit = bodyLimitOf(req);
  if (Number(req.headers["content-length"] ?? 0) > limit) {
    sendError(res, "payload_too_large", `The request body is larger than ${limitText(limit)}.`);
    return false;
  }
  res.writeContinue();
  return true;
}

/** Writes an error answer straight on the connection, then closes it. */
function answerOnSocket(socket: Socket, code: ErrorCode, message: string, extraHeaders = ""): void {
  if (!socket.writable) return void socket.destroy();
  const status = statusOf(code);
  const body = errorBody(code, message);
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}Connection: close\r\n\r\n${body}`,
  );
  socket.destroySoon();
}
