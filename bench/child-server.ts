import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Runs one of the benchmark's own servers in its child process (bench/processes.ts, startListening):
 * on a free port of 127.0.0.1, saying `listening <url>` once it does, until SIGTERM or SIGINT.
 */
export function serveInChild(server: Server): void {
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
}
