import { createServer, type ServerResponse } from "node:http";
import { hasBody } from "../src/http/body.ts";
import { serveInChild } from "./child-server.ts";

// The benchmark's baseline: a bare node:http server in a process of its own, doing the I/O keyplane
// does and nothing else: it reads the request's body, when there is one (without parsing it), and
// answers with the JSON body it is given (BENCH_BARE_BODY: the bytes keyplane answered the same
// request), so that the ratio of the two throughputs is what keyplane's work per request costs on
// this machine.
const body = Buffer.from(process.env.BENCH_BARE_BODY ?? "{}", "utf8");
const headers = { "Content-Type": "application/json; charset=utf-8", "Content-Length": String(body.length) };

function answer(res: ServerResponse): void {
  res.writeHead(200, headers);
  res.end(body);
}

const server = createServer((req, res) => {
  if (hasBody(req)) req.resume().once("end", () => answer(res));
  else answer(res);
});
serveInChild(server);
