import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

// The benchmark's baseline: a bare node:http server in a process of its own, answering every request
// with the JSON body it is given (BENCH_BARE_BODY: the bytes GET /keys/self answered), so that the
// ratio of the two throughputs is what keyplane's work per request costs on this machine.
const body = Buffer.from(process.env.BENCH_BARE_BODY ?? "{}", "utf8");
const headers = { "Content-Type": "application/json; charset=utf-8", "Content-Length": String(body.length) };

const server = createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});
server.keepAliveTimeout = 65_000; // as keyplane's
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`listening http://127.0.0.1:${port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
