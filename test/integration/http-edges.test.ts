import { once } from "node:events";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { connect, exchange, parseResponses, type RawResponse } from "../support/raw-http.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// The edges of HTTP/1.1, at the socket level: raw bytes in, raw bytes out, so that nothing a client
// library does hides what the server sends (docs/api.md, "HTTP edges"): pipelined requests with a
// malformed one among them, requests Node refuses before any handler, slow clients, and
// `Expect: 100-continue`.
let svc: TestService;
let acme: Tenant;
let http: Listening;
/** The same service with its time-outs injected short, so slow clients are seen in milliseconds. */
let slow: Listening;
const SHORT = { headersTimeoutMs: 300, requestTimeoutMs: 800 };

beforeAll(async () => {
  svc = await startService("pglite");
  acme = await createTenant(svc, "acme");
  http = await listen(svc.app, 0, "127.0.0.1");
  slow = await listen(svc.app, 0, "127.0.0.1", SHORT);
});
afterAll(async () => {
  await http?.close(100);
  await slow?.close(100);
  await svc?.stop();
});

function expectJsonError(res: RawResponse | undefined, status: number, code: string): void {
  expect(res, "an answer").toBeDefined();
  expect(res!.status, res!.body).toBe(status);
  expect(res!.headers["content-type"]).toMatch(/^application\/json/);
  expect(JSON.parse(res!.body)).toMatchObject({ status, error: code, message: expect.any(String) });
}

const head = (lines: string[]) => lines.join("\r\n") + "\r\n\r\n";
const provisionHead = (headers: string[]) =>
  head(["POST /keys HTTP/1.1", "Host: keyplane", `Authorization: Bearer ${acme.keys.customer}`, "Content-Type: application/json", ...headers]);

describe("pipelined requests with a malformed one among them", () => {
  it("answer each request in order: the DELETE's 204, then the 400, then the close (20 trials)", async () => {
    for (let trial = 0; trial < 20; trial++) {
      const made = await svc.as(acme.keys.customer).post("/keys", { name: `pipelined-${trial}` });
      expect(made.status).toBe(200);
      const deleteThenGarbage =
        head([`DELETE /keys/${made.body.id} HTTP/1.1`, "Host: keyplane", `Authorization: Bearer ${acme.keys.customer}`]) +
        head(["GARBAGE / HTTP/1.1"]);
      const responses = await exchange(http.url, deleteThenGarbage);
      expect(responses.map((r) => r.status), `trial ${trial}`).toEqual([204, 400]);
      expectJsonError(responses[1], 400, "bad_request");
      expect((await svc.as(acme.keys.customer).get(`/keys/${made.body.id}`)).status, "the key is deleted").toBe(404);
    }
  });

  it("keep every good answer before the 400, however many there were", async () => {
    const health = head(["GET /healthz HTTP/1.1", "Host: keyplane"]);
    const self = head(["GET /keys/self HTTP/1.1", "Host: keyplane", `Authorization: Bearer ${acme.keys.domain}`]);
    const list = head(["GET /keys HTTP/1.1", "Host: keyplane", `Authorization: Bearer ${acme.keys.customer}`]);
    const responses = await exchange(http.url, health + self + list + "GARBAGE\r\n\r\n");
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 400]);
    expect(JSON.parse(responses[1]!.body).keyId).toBe(acme.keys.domain);
    expect(Array.isArray(JSON.parse(responses[2]!.body))).toBe(true);
    expectJsonError(responses[3], 400, "bad_request");
  });

  it("answer a request whose body breaks the framing with its own 400, at once", { timeout: 5_000 }, async () => {
    const responses = await exchange(http.url, provisionHead(["Transfer-Encoding: chunked"]) + "zz\r\n{}\r\n0\r\n\r\n");
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 400, "bad_request");
  });

  it("answer a malformed request alone with the JSON 400", async () => {
    const responses = await exchange(http.url, "GARBAGE\r\n\r\n");
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 400, "bad_request");
  });
});

describe("requests Node refuses before any handler", () => {
  it("an HTTP/1.1 request without Host gets the JSON 400", async () => {
    const responses = await exchange(http.url, head(["GET /healthz HTTP/1.1"]));
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 400, "bad_request");
  });

  it("an HTTP/1.0 request needs no Host", async () => {
    const responses = await exchange(http.url, head(["GET /healthz HTTP/1.0"]));
    expect(responses.map((r) => r.status)).toEqual([200]);
  });

  it("CONNECT gets the JSON 405 with Allow, then the close", async () => {
    const responses = await exchange(http.url, head(["CONNECT example.com:443 HTTP/1.1", "Host: example.com:443"]));
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 405, "method_not_allowed");
    expect(responses[0]!.headers.allow).toBe("GET, POST, PUT, DELETE");
  });

  it("headers over 16 KiB get the JSON 400", async () => {
    const responses = await exchange(http.url, head(["GET /healthz HTTP/1.1", "Host: keyplane", `X-Big: ${"x".repeat(20_000)}`]));
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 400, "bad_request");
  });

  it("an expectation other than 100-continue is served as if it were absent, not 417 without a body", async () => {
    const responses = await exchange(http.url, head(["GET /healthz HTTP/1.1", "Host: keyplane", "Expect: the-unexpected", "Connection: close"]));
    expect(responses.map((r) => r.status)).toEqual([200]);
  });
});

describe("slow clients", () => {
  it("keep production time-outs by default: headers 10 s, the whole request 30 s", () => {
    expect(http.server.headersTimeout).toBe(10_000);
    expect(http.server.requestTimeout).toBe(30_000);
  });

  it("headers that do not arrive in time get the JSON 408, then the close", { timeout: 5_000 }, async () => {
    const conn = await connect(slow.url);
    const started = performance.now();
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: keyplane\r\n");
    const responses = parseResponses(await conn.closed);
    expect(responses).toHaveLength(1);
    expectJsonError(responses[0], 408, "request_timeout");
    expect(performance.now() - started).toBeGreaterThanOrEqual(SHORT.headersTimeoutMs - 10);
  });

  it("a trickled body is cut at the request time-out: the JSON 408, then the close", { timeout: 5_000 }, async () => {
    const conn = await connect(slow.url);
    const started = performance.now();
    conn.socket.write(provisionHead(["Content-Length: 1000"]));
    // One byte every 20 ms: far slower than the request time-out allows for 1000 bytes.
    const trickle = setInterval(() => conn.socket.writable && conn.socket.write(" "), 20);
    try {
      const responses = parseResponses(await conn.closed);
      expect(responses).toHaveLength(1);
      expectJsonError(responses[0], 408, "request_timeout");
      expect(performance.now() - started).toBeGreaterThanOrEqual(SHORT.requestTimeoutMs - 10);
    } finally {
      clearInterval(trickle);
    }
  });

  it("a 408 for headers waits behind the answers of the requests before it", { timeout: 5_000 }, async () => {
    const responses = await exchange(slow.url, head(["GET /healthz HTTP/1.1", "Host: keyplane"]) + "GET /healthz HTTP/1.1\r\nHost: keyplane\r\n");
    expect(responses.map((r) => r.status)).toEqual([200, 408]);
    expectJsonError(responses[1], 408, "request_timeout");
  });
});

describe("slow clients, seen from the handler", () => {
  // A handler of the test's own: GET /held is answered only when the test says; POST reads its body.
  let held: ServerResponse | undefined;
  let reading: IncomingMessage | undefined;
  const app: RequestListener = (req, res) => {
    if (req.url === "/held") return void (held = res);
    if (req.url === "/early") return void res.end("early");
    reading = req;
    req.resume();
    req.on("end", () => res.end("read"));
  };
  let server: Listening;
  beforeAll(async () => {
    server = await listen(app, 0, "127.0.0.1", SHORT);
  });
  afterAll(() => server?.close(100));

  it("the request whose body is late gets the 408, not an earlier one still being answered", { timeout: 5_000 }, async () => {
    const conn = await connect(server.url);
    const late = once(server.server, "clientError");
    conn.socket.write(head(["GET /held HTTP/1.1", "Host: keyplane"]) + head(["POST /upload HTTP/1.1", "Host: keyplane", "Content-Length: 1000"]));
    await late;
    held!.end("held");
    const responses = parseResponses(await conn.closed);
    expect(responses.map((r) => [r.status, r.body.startsWith("{") ? JSON.parse(r.body).error : r.body])).toEqual([[200, "held"], [408, "request_timeout"]]);
  });

  it("a request answered before its body came gets no second answer when the body is late", { timeout: 5_000 }, async () => {
    const conn = await connect(server.url);
    conn.socket.write(head(["POST /early HTTP/1.1", "Host: keyplane", "Content-Length: 1000"]) + "{");
    const responses = parseResponses(await conn.closed);
    expect(responses.map((r) => [r.status, r.body])).toEqual([[200, "early"]]);
  });

  it("the handler reading a late body learns that it will not come", { timeout: 5_000 }, async () => {
    reading = undefined;
    const conn = await connect(server.url);
    conn.socket.write(head(["POST /upload HTTP/1.1", "Host: keyplane", "Content-Length: 1000"]) + "{");
    await conn.closed;
    // The body stream ends in an abort, so whatever was reading it (express's body parser) stops.
    expect(reading).toBeDefined();
    if (!reading!.destroyed) await once(reading!, "close");
    expect(reading!.complete).toBe(false);
  });
});

describe("Expect: 100-continue", () => {
  it("with a declared body over 16 KiB gets 413 at once, without 100, then the close", { timeout: 5_000 }, async () => {
    const conn = await connect(http.url);
    conn.socket.write(provisionHead([`Content-Length: ${16 * 1024 + 1}`, "Expect: 100-continue"]));
    const received = await conn.closed;
    expect(received.toString("latin1")).not.toContain("100 Continue");
    const responses = parseResponses(received);
    expect(responses.map((r) => r.status)).toEqual([413]);
    expectJsonError(responses[0], 413, "payload_too_large");
  });

  it("with a body within the limit gets 100, then the answer to the body it sent", async () => {
    const body = JSON.stringify({ name: "after-continue" });
    const conn = await connect(http.url);
    conn.socket.write(provisionHead([`Content-Length: ${Buffer.byteLength(body)}`, "Expect: 100-continue"]));
    await conn.until((data) => data.includes("\r\n\r\n"));
    expect(conn.received().toString("latin1")).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    conn.socket.write(body);
    const received = await conn.until((data) => parseResponses(data).some((r) => r.status === 200 && Buffer.byteLength(r.body) === Number(r.headers["content-length"])));
    conn.socket.destroy();
    const answer = parseResponses(received).at(-1)!;
    expect(JSON.parse(answer.body)).toMatchObject({ name: "after-continue", keyId: expect.stringMatching(/^XI[0-9A-F]{32}$/) });
  });
});
