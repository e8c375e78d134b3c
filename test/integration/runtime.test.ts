import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listening } from "../../src/http/server.ts";
import { startService, type TestService } from "../support/service.ts";

// The voice-application runtime (docs/api.md, "Runtime"): a small voice application, an HTTP server in this test,
// receives the runtime key in the runtime header and uses it against the running key service.
async function readBody(req: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of req) body += chunk;
  return body;
}

// The application time-out, injected short on a service of its own: the slow application never
// answers, so that test waits only this; the others keep the real 10 s, however loaded the machine.
const TIMEOUT_MS = 300;

describe.each([["X-SVC-APIKey"], ["X-Test-Runtime-Key"]])("runtime with header %s", (header) => {
  let svc: TestService;
  let http: Listening;
  let voiceApp: Server;
  let voiceUrl: string;
  const seen: { method: string; key: string | undefined; body: string }[] = [];

  beforeAll(async () => {
    svc = await startService("pglite", { runtimeHeader: header });
    http = await listen(svc.app, 0, "127.0.0.1");
    voiceApp = createServer(async (req, res) => {
      const key = req.headers[header.toLowerCase()] as string | undefined;
      seen.push({ method: req.method!, key, body: await readBody(req) });
      if (req.url === "/slow") return; // never answers
      const call = (path: string) => fetch(http.url + path, { headers: { Authorization: `Bearer ${key}` } });
      const self = await call("/keys/self");
      const own = await call("/applications/self/keys");
      res.writeHead(201, { "content-type": "application/vnd.voice+json" });
      res.end(JSON.stringify({ self: self.status, selfBody: await self.json(), own: own.status, ownBody: await own.json() }));
    });
    await new Promise<void>((resolve) => voiceApp.listen(0, "127.0.0.1", resolve));
    voiceUrl = `http://127.0.0.1:${(voiceApp.address() as AddressInfo).port}`;

    const a = svc.admin;
    expect((await a.post("/admin/customers", { name: "acme" })).status).toBe(201);
    expect((await a.post("/admin/customers/acme/domains", { domain: "sip.acme.example" })).status).toBe(201);
    const apps = "/admin/customers/acme/domains/sip.acme.example/applications";
    for (const body of [
      { name: "ivr", url: `${voiceUrl}/ivr` },
      { name: "poll", url: `${voiceUrl}/poll`, method: "GET" },
      { name: "mute" },
      { name: "down", url: "http://127.0.0.1:9/" },
      { name: "slow", url: `${voiceUrl}/slow` },
    ]) {
      expect((await a.post(apps, body)).status).toBe(201);
    }
  });
  afterAll(async () => {
    voiceApp.closeAllConnections();
    voiceApp.close();
    await http.close(100);
    await svc.stop();
  });

  const app = (name: string) => `/admin/customers/acme/domains/sip.acme.example/applications/${name}`;

  it("provisions the runtime key idempotently: an application key named runtime", async () => {
    const first = await svc.admin.post(`${app("ivr")}/runtime-key`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ type: "application", name: "runtime", application: { name: "ivr" }, domain: { domain: "sip.acme.example" } });
    expect((await svc.admin.post(`${app("ivr")}/runtime-key`)).body).toEqual(first.body);
  });

  it("hands the key to the application, which can use it, and answers with the application's answer", async () => {
    const runtime = (await svc.admin.post(`${app("ivr")}/runtime-key`)).body;
    const res = await svc.admin.post(`${app("ivr")}/invoke`, { call: "+12125550100" });
    expect(res.status).toBe(201);
    expect(res.headers["content-type"]).toBe("application/vnd.voice+json");
    const answer = JSON.parse(res.text);
    expect(answer.self).toBe(200);
    expect(answer.selfBody).toMatchObject({ keyId: runtime.keyId, type: "application", name: "runtime" });
    expect(answer.own).toBe(200);
    expect(answer.ownBody.map((k: { keyId: string }) => k.keyId)).toContain(runtime.keyId);
    expect(seen.at(-1)).toEqual({ method: "POST", key: runtime.keyId, body: JSON.stringify({ call: "+12125550100" }) });
  });

  it("uses the application's method: GET carries no body", async () => {
    const res = await svc.admin.post(`${app("poll")}/invoke`, { ignored: true });
    expect(res.status).toBe(201);
    expect(seen.at(-1)).toMatchObject({ method: "GET", body: "" });
    expect(seen.at(-1)!.key).toMatch(/^XI[0-9A-F]{32}$/);
  });

  it("answers 502 with the error body when there is no url or the application is unreachable", async () => {
    for (const name of ["mute", "down"]) {
      const res = await svc.admin.post(`${app(name)}/invoke`, {});
      expect(res.status, name).toBe(502);
      expect(res.body).toMatchObject({ status: 502, error: "bad_gateway" });
    }
  });

  it("answers 502 when the application is slower than its time-out (10 s; here injected short)", async () => {
    const impatient = await startService("pglite", { runtimeHeader: header, invokeTimeoutMs: TIMEOUT_MS });
    const a = impatient.admin;
    expect((await a.post("/admin/customers", { name: "acme" })).status).toBe(201);
    expect((await a.post("/admin/customers/acme/domains", { domain: "sip.acme.example" })).status).toBe(201);
    expect((await a.post("/admin/customers/acme/domains/sip.acme.example/applications", { name: "slow", url: `${voiceUrl}/slow` })).status).toBe(201);
    const started = performance.now();
    const res = await impatient.admin.post(`${app("slow")}/invoke`, {});
    await impatient.stop();
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ error: "bad_gateway", message: `The application did not answer within ${TIMEOUT_MS / 1000} s.` });
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 10);
  });
});
