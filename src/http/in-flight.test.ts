import { once } from "node:events";
import { createServer, type Server } from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { latestExchange, owe } from "./in-flight.ts";

// The connection's latest exchange is what a 'clientError' on a request still being read answers on
// (http/refusals.ts); once that request is read in full and answered, nothing may keep it alive.
describe("in-flight tracking", () => {
  let server: Server | undefined;
  let client: Socket | undefined;
  afterEach(async () => {
    client?.destroy();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  /** A server that answers once a request's body has been read, and the server side of one connection to it. */
  async function connect(): Promise<{ socket: Socket; send: (text: string) => void; answers: () => string }> {
    server = createServer((req, res) => {
      owe(req, res);
      req.resume().on("end", () => res.end("ok"));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const accepted = once(server, "connection") as Promise<[Socket]>;
    client = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
    let received = "";
    client.on("data", (chunk: Buffer) => (received += chunk.toString()));
    const [socket] = await accepted;
    return { socket, send: (text) => client!.write(text), answers: () => received };
  }

  const until = async (done: () => boolean) => {
    for (let i = 0; i < 1_000 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(done()).toBe(true);
  };

  it("holds the request being read, and lets go of it once it is read in full and answered", async () => {
    const { socket, send, answers } = await connect();
    send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
    await until(() => latestExchange(socket) !== undefined);
    expect(latestExchange(socket)!.req.complete).toBe(false);
    send("cd");
    await until(() => answers().includes("ok") && latestExchange(socket) === undefined);
    send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => answers().split("ok").length === 3 && latestExchange(socket) === undefined);
  });
});
