import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// A webhook receiver of the tests' own, on 127.0.0.1: it keeps every request, answers as the test
// says (a status, headers, or holding the request unanswered), and verifies Standard Webhooks
// signatures as a receiver would, with its own code, not keyplane's.

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type Answer = { status: number; headers?: Record<string, string> } | "hold";

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** How the next requests are answered (default 204). */
  answer: (r: Received) => Answer;
  /** Resolves once `n` requests in all have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Answers the held requests with this status. */
  release(status?: number): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: "", port: 0, received: [],
    answer: () => ({ status: 204 }),
    async waitFor(n, timeoutMs = 10_000) {
      if (receiver.received.length < n) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the receiver got ${receiver.received.length} requests, not ${n}`)), timeoutMs);
          waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
        });
      }
      return receiver.received;
    },
    release(status = 204) {
      for (const res of held.splice(0)) res.writeHead(status).end();
    },
    close: () => new Promise((resolve) => {
      receiver.release();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => {
      const r = { path: req.url ?? "", headers: req.headers, body };
      receiver.received.push(r);
      for (const w of waiters.filter((w) => receiver.received.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const answer = receiver.answer(r);
      if (answer === "hold") held.push(res);
      else res.writeHead(answer.status, answer.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}`;
  return receiver;
}

/** Whether a request carries a valid Standard Webhooks signature under `secret` (whsec_...). */
export function signatureValid(secret: string, r: Received): boolean {
  const id = r.headers["webhook-id"];
  const timestamp = r.headers["webhook-timestamp"];
  const signatures = r.headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = Buffer.from(createHmac("sha256", key).update(`${id}.${timestamp}.${r.body}`).digest("base64"));
  return signatures.split(" ").some((s) => {
    const [version, signature] = s.split(",");
    const given = Buffer.from(signature ?? "");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
