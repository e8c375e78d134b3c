import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { owe } from "./in-flight.ts";
import { continueOrRefuse, onClientError, onConnect, refusedRequest } from "./refusals.ts";

// The HTTP server around keyplane's handler: listening, the edges of HTTP/1.1 that Node handles before
// any handler (refusals.ts, docs/api.md "HTTP edges"), time-outs for slow clients, and a graceful stop.
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
  /** How often Node looks for requests over their time, so how late a 408 may be (1 s, less for short time-outs). */
  checkIntervalMs?: number;
}

export async function listen(app: RequestListener, port: number, host: string, options: ServerOptions = {}): Promise<Listening> {
  const { headersTimeoutMs = 10_000, requestTimeoutMs = 30_000 } = options;
  const server = createServer({
    // Checked in refusedRequest, which answers with the JSON body (Node's own check answers none).
    requireHostHeader: false,
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: options.checkIntervalMs ?? Math.max(25, Math.min(1_000, headersTimeoutMs / 5)),
    keepAliveTimeout: 65_000,
  });
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    owe(req, res);
    if (!refusedRequest(req, res)) app(req, res);
  };
  server.on("request", serve);
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    owe(req, res);
    if (continueOrRefuse(req, res) && !refusedRequest(req, res)) app(req, res);
  });
  // An expectation keyplane does not know is ignored (RFC 9110, 10.1.1 allows it) rather than answered
  // with Node's 417, which has no body.
  server.on("checkExpectation", serve);
  server.on("clientError", onClientError);
  server.on("connect", onConnect);

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
