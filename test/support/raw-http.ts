import net from "node:net";

// HTTP at the socket level: the bytes go out exactly as written, and every byte that comes back is
// kept, so a test sees what a client library would hide (an answer missing, two answers out of order,
// a 100 Continue, an answer with no body, a connection closed without a word).

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  socket: net.Socket;
  /** Everything received so far. */
  received(): Buffer;
  /** Resolves once the server has closed the connection (or it was reset), with everything received. */
  closed: Promise<Buffer>;
  /** Resolves once the received bytes satisfy `done`. */
  until(done: (received: Buffer) => boolean): Promise<Buffer>;
}

export async function connect(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  let data = Buffer.alloc(0);
  const waiters = new Set<() => void>();
  socket.on("data", (chunk: Buffer) => {
    data = Buffer.concat([data, chunk]);
    for (const check of waiters) check();
  });
  // A reset is an end like any other here: the test looks at what arrived before it.
  socket.on("error", () => undefined);
  const closed = new Promise<Buffer>((resolve) => socket.once("close", () => resolve(data)));
  return {
    socket,
    received: () => data,
    closed,
    until: (done) =>
      new Promise<Buffer>((resolve, reject) => {
        const check = () => {
          if (!done(data)) return;
          waiters.delete(check);
          resolve(data);
        };
        waiters.add(check);
        void closed.then(() => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          if (done(data)) resolve(data);
          else reject(new Error(`connection closed; received: ${JSON.stringify(data.toString("latin1"))}`));
        });
        check();
      }),
  };
}

/** Sends `bytes` on a new connection and returns every response the server wrote before it closed. */
export async function exchange(url: string, bytes: string | Buffer): Promise<RawResponse[]> {
  const conn = await connect(url);
  conn.socket.write(bytes);
  return parseResponses(await conn.closed);
}

/**
 * The responses in a byte stream, in order. Bodies are framed by Content-Length, chunked encoding, or
 * (with neither) the end of the stream; 1xx, 204 and 304 answers have none. A truncated last response
 * is returned with what arrived of its body.
 */
export function parseResponses(bytes: Buffer): RawResponse[] {
  const text = bytes.toString("latin1");
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < text.length) {
    const headEnd = text.indexOf("\r\n\r\n", at);
    if (headEnd < 0) {
      // A head still arriving; anything else is not HTTP at all.
      const rest = text.slice(at);
      if (!rest.startsWith("HTTP/") && !"HTTP/".startsWith(rest)) throw new Error(`not an HTTP response: ${JSON.stringify(text.slice(at, at + 200))}`);
      break;
    }
    const [statusLine, ...lines] = text.slice(at, headEnd).split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine!);
    if (!match) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    at = headEnd + 4;
    let body = "";
    if (status < 200 || status === 204 || status === 304) {
      // no body
    } else if (headers["content-length"] !== undefined) {
      body = text.slice(at, at + Number(headers["content-length"]));
      at += body.length;
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      for (;;) {
        const sizeEnd = text.indexOf("\r\n", at);
        if (sizeEnd < 0) break;
        const size = parseInt(text.slice(at, sizeEnd), 16);
        at = sizeEnd + 2;
        if (size === 0) {
          at = text.indexOf("\r\n", at) + 2;
          break;
        }
        body += text.slice(at, at + size);
        at += size + 2;
      }
    } else {
      body = text.slice(at);
      at = text.length;
    }
    responses.push({ status, headers, body: Buffer.from(body, "latin1").toString("utf8") });
  }
  return responses;
}
