import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// The edges of HTTP/1.1, at the socket level: raw bytes in, raw bytes out, so that nothing a client
// library does hides what the server sends (docs/api.md, "HTTP edges").
interface Exchange {
  text: string;
  ms: number;
}

/** Writes `chunks` (strings sent at once; a number waits that many ms, as a slow client does), then reads until the server closes. */
function exchange(url: string, chunks: (string | number)[], limitMs = 10_000): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let text = "";
    const limit = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${limitMs} ms; got: ${text}`));
    }, limitMs);
    socket.on("data", (d) => (text += d.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(limit);
      resolve({ text, ms: performance.now() - started });
    });
    void (async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        if (typeof chunk === "number") await new Promise((r) => setTimeout(r, chunk));
        else socket.write(chunk);
      }
    })();
  });
}

/** The answers in a stream of bytes: status and JSON body (if any), in order. */
function answers(text: string): { status: number; body: unknown }[] {
  const out: { status: number; body: unknown }[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/1.1 ")) {
    const headEnd = rest.indexOf("\r\n\r\n");
    const head = rest.slice(0, headEnd);
    const status = Number(head.slice(9, 12));
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const body = rest.slice(headEnd + 4, headEnd + 4 + length);
    out.push({ status, body: body ? JSON.parse(body) : undefined });
    rest = rest.slice(headEnd + 4 + length);
  }
  return out;
}

describe("HTTP edges", () => {
  let svc: TestService;
  let http: Listening;
  let slow: Listening;
  let acme: Tenant;

  beforeAll(async () => {
    svc = await startService("pglite");
    http = await listen(svc.app, 0, "127.0.0.1");
    // The same service with its time-outs injected short: headers within 300 ms, the request within 800 ms.
    slow = await listen(svc.app, 0, "127.0.0.1", { headersTimeoutMs: 300, requestTimeoutMs: 800 });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => {
    await http?.close(100);
    await slow?.close(100);
    await svc?.stop();
  });

  it("answers a request pipelined before a malformed one first, then refuses the malformed one (20 trials)", async () => {
    for (let trial = 0; trial < 20; trial++) {
      const key = (await svc.as(acme.keys.customer).post("/keys", { name: `pipelined-${trial}` })).body as { id: number };
      const { text } = await exchange(http.url, [
        `DELETE /keys/${key.id} HTTP/1.1\r\nHost: keyplane\r\nAuthorization: Bearer ${acme.keys.customer}\r\n\r\nGARBAGE / HTTP/1.1\r\n\r\n`,
      ]);
      expect(answers(text).map((a) => a.status), text).toEqual([204, 400]);
      expect(answers(text)[1]?.body).toMatchObject({ status: 400, error: "bad_request" });
      expect((await svc.as(acme.keys.customer).get(`/keys/${key.id}`)).status).toBe(404);
    }
  });

  it("answers an HTTP/1.1 request without Host with the JSON error", async () => {
    const { text } = await exchange(http.url, ["GET /healthz HTTP/1.1\r\n\r\n"]);
    expect(answers(text)).toEqual([{ status: 400, body: { status: 400, error: "bad_request", message: "An HTTP/1.1 request needs a Host header." } }]);
  });

  it("answers CONNECT with the JSON error, then closes", async () => {
    const { text } = await exchange(http.url, ["CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"]);
    expect(answers(text)).toEqual([{ status: 405, body: expect.objectContaining({ status: 405, error: "method_not_allowed" }) }]);
  });

  it("answers 408 and closes when the headers do not arrive in time", async () => {
    const { text, ms } = await exchange(slow.url, ["GET /healthz HTTP/1.1\r\nHost: keyplane\r\n", 5_000, "X-Late: 1\r\n\r\n"]);
    expect(answers(text)).toEqual([{ status: 408, body: expect.objectContaining({ status: 408, error: "request_timeout" }) }]);
    expect(ms).toBeLessThan(2_000);
  });

  it("answers 408 and closes when a trickled body does not arrive in time", async () => {
    const trickle = Array.from({ length: 60 }, (_, i) => [100, i % 2 ? " " : "{"]).flat();
    const head = `POST /keys HTTP/1.1\r\nHost: keyplane\r\nAuthorization: Bearer ${acme.keys.customer}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const { text, ms } = await exchange(slow.url, [head, ...trickle]);
    expect(answers(text)).toEqual([{ status: 408, body: expect.objectContaining({ status: 408, error: "request_timeout" }) }]);
    expect(ms).toBeLessThan(3_000);
  });

  it("refuses a declared body over 16 KiB at once, without 100 Continue", async () => {
    const head = `POST /keys HTTP/1.1\r\nHost: keyplane\r\nAuthorization: Bearer ${acme.keys.customer}\r\nContent-Type: application/json\r\nContent-Length: 20000\r\nExpect: 100-continue\r\n\r\n`;
    const { text } = await exchange(http.url, [head]);
    expect(text).not.toContain("100 Continue");
    expect(answers(text)).toEqual([{ status: 413, body: expect.objectContaining({ status: 413, error: "payload_too_large" }) }]);
  });

  it("says 100 Continue to a declared body within the limit, and answers the request", async () => {
    const body = JSON.stringify({ name: "continued" });
    const head = `POST /keys HTTP/1.1\r\nHost: keyplane\r\nAuthorization: Bearer ${acme.keys.customer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;
    const { text } = await exchange(http.url, [head, 50, body]);
    expect(text.startsWith("HTTP/1.1 100 Continue\r\n\r\n")).toBe(true);
    expect(answers(text.slice("HTTP/1.1 100 Continue\r\n\r\n".length))).toEqual([{ status: 200, body: expect.objectContaining({ name: "continued" }) }]);
  });
});
