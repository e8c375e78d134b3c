import { createServer, connect, type Server, type Socket } from "node:net";

// A TCP proxy of the test's own between keyplane and PostgreSQL, to make the network fail as networks
// do: `cut` resets every connection and refuses new ones (a database that is down); `stall` holds
// every byte both ways without closing anything (a partition); `restore` ends either.
export interface TcpProxy {
  port: number;
  /** A connection string like `url`, but through the proxy. */
  urlFor(url: string): string;
  cut(): void;
  stall(): void;
  restore(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let mode: "pass" | "cut" | "stall" = "pass";
  const pairs = new Set<Pair>();

  const server: Server = createServer((client) => {
    if (mode === "cut") return void client.resetAndDestroy();
    const upstream = connect(targetPort, targetHost);
    const pair: Pair = { client, upstream, held: { toUpstream: [], toClient: [] } };
    pairs.add(pair);
    const forward = (from: Socket, to: Socket, held: Buffer[]) =>
      from.on("data", (chunk: Buffer) => (mode === "stall" ? held.push(chunk) : to.write(chunk)));
    forward(client, upstream, pair.held.toUpstream);
    forward(upstream, client, pair.held.toClient);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;

  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    cut() {
      mode = "cut";
      for (const { client, upstream } of pairs) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    stall() {
      mode = "stall";
    },
    restore() {
      mode = "pass";
      for (const { client, upstream, held } of pairs) {
        for (const chunk of held.toUpstream.splice(0)) upstream.write(chunk);
        for (const chunk of held.toClient.splice(0)) client.write(chunk);
      }
    },
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
