import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";

// The HTTP server around keyplane's handler: listening, the answers Node gives before any handler,
// and a graceful stop.
export interface Listening {
  server: Server;
  url: string;
  /** Graceful stop: no new connections, requests in flight finish (up to `graceMs`), then it resolves. */
  close(graceMs?: number): Promise<void>;
}

export async function listen(app: RequestListener, port: number, host: string): Promise<Listening> {
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  // Requests Node refuses before any handler runs (a request line or headers over 16 KiB, bad
  // framing) still get the JSON error body.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    const body = JSON.stringify({ status: 400, error: "bad_request", message: "The request could not be read (malformed, or headers over 16 KiB)." });
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
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
