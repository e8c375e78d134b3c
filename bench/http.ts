import { Agent, request as httpRequest } from "node:http";

// A small keep-alive HTTP client for the set-up steps and the revocation trials (one request at a
// time per agent socket, so a poll loop measures one round trip after another).

export interface Answer {
  status: number;
  body: string;
  json<T = unknown>(): T;
}

export interface Client {
  request(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<Answer>;
  close(): void;
}

export function client(baseUrl: string, sockets = 4): Client {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  const base = new URL(baseUrl);
  return {
    request(method, path, { token, body } = {}) {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const headers: Record<string, string | number> = {};
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      if (payload) {
        headers["content-type"] = "application/json";
        headers["content-length"] = payload.length;
      }
      return new Promise((resolve, reject) => {
        const req = httpRequest({ agent, host: base.hostname, port: base.port, method, path, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            resolve({ status: res.statusCode ?? 0, body: text, json: <T>() => JSON.parse(text) as T });
          });
        });
        req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
        req.on("error", reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

/** Like `client().request`, but anything but `expected` is an error that shows the answer. */
export async function expectStatus(answer: Promise<Answer>, expected: number, what: string): Promise<Answer> {
  const got = await answer;
  if (got.status !== expected) throw new Error(`${what}: expected ${expected}, got ${got.status}: ${got.body.slice(0, 300)}`);
  return got;
}

export interface Fixture {
  customer: string;
  token: string;
  id: number;
}

/** A customer and one customer key, through the admin API. */
export async function customerWithKey(admin: Client, adminToken: string, customer: string): Promise<Fixture> {
  await expectStatus(admin.request("POST", "/admin/customers", { token: adminToken, body: { name: customer } }), 201, "create customer");
  const key = await expectStatus(
    admin.request("POST", `/admin/customers/${customer}/keys`, { token: adminToken, body: { name: `${customer}-owner` } }),
    200,
    "provision customer key",
  );
  const { keyId, id } = key.json<{ keyId: string; id: number }>();
  return { customer, token: keyId, id };
}
