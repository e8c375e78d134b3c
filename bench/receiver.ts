import { createServer, type ServerResponse } from "node:http";
import { serveInChild } from "./child-server.ts";

// The webhooks phase's receiver (bench/webhooks.ts), in a process of its own as a receiver is another
// service: on the load generator's event loop it would take from the load it makes. It counts the
// messages POSTed to /bench; while held, it answers none of them (the sender's attempts wait) until
// POST /release. GET /stats answers {received, lastAt}: lastAt the time of the last message, in
// milliseconds since the epoch with a fraction (performance.timeOrigin + performance.now()); GET
// /arrivals the time of each message so far, in the same form.
const held: ServerResponse[] = [];
let holding = true;
let received = 0;
let lastAt = 0;
const arrivals: number[] = [];

const server = createServer((req, res) => {
  req.resume().once("end", () => {
    if (req.url === "/stats") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ received, lastAt }));
    if (req.url === "/arrivals") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(arrivals));
    if (req.url === "/release") {
      holding = false;
      for (const waiting of held.splice(0)) waiting.writeHead(204).end();
      return void res.writeHead(204).end();
    }
    received++;
    lastAt = performance.timeOrigin + performance.now();
    arrivals.push(lastAt);
    if (holding) held.push(res);
    else res.writeHead(204).end();
  });
});
serveInChild(server);
