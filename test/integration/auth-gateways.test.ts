import { request } from "node:http";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthGateway } from "../../src/http/verification/auth-gateway.ts";
import { listen } from "../../src/http/server.ts";
import { startPeer, startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// /auth reads one gateway's headers, named by KEYPLANE_AUTH_GATEWAY (docs/gateways.md, "Which
// gateway"). A gateway passes the client's own headers on unless told otherwise, so a client could
// add the other family's headers beside the gateway's, naming a path of its own scope while the
// gateway passes it on to another. Each service below is keyplane as `keyplane serve` wires it, in one
// mode, on one database.
const SCOPE = 'Bearer realm="keyplane", error="insufficient_scope"';

describe("/auth reads one gateway's headers", () => {
  let svc: TestService;
  let acme: Tenant;
  const by = {} as Record<AuthGateway, TestService>;
  let own: string;
  let other: string;

  beforeAll(async () => {
    svc = await startService("pglite");
    acme = await createTenant(svc, "acme");
    by.nginx = svc;
    by.traefik = await startPeer(svc, { authGateway: "traefik" });
    by.envoy = await startPeer(svc, { authGateway: "envoy" });
    // A domain key: its own domain's trunks, never its sibling domain's.
    own = `/domains/${acme.domains[0]}/trunks`;
    other = `/domains/${acme.domains[1]}/trunks`;
  });
  afterAll(async () => {
    await by.traefik?.stop();
    await by.envoy?.stop();
    await svc?.stop();
  });

  const ask = (gateway: AuthGateway, url: string, headers: Record<string, string>, method: "get" | "post" = "get") => {
    const req = supertest(by[gateway].app)[method](url).set("Authorization", `Bearer ${acme.keys.domain}`);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    return req;
  };
  const verdict = (res: { status: number; headers: Record<string, string> }) =>
    res.status === 401 ? `401 ${res.headers["www-authenticate"]}` : String(res.status);

  it("judges the gateway's own path: each mode lets the key through to its own domain", async () => {
    expect(verdict(await ask("nginx", "/auth", { "X-Original-Method": "GET", "X-Original-URI": own }))).toBe("200");
    expect(verdict(await ask("traefik", "/auth", { "X-Forwarded-Method": "GET", "X-Forwarded-Uri": own }))).toBe("200");
    expect(verdict(await ask("envoy", `/auth${own}`, {}))).toBe("200");
    expect(verdict(await ask("nginx", "/auth", { "X-Original-Method": "GET", "X-Original-URI": other }))).toBe(`401 ${SCOPE}`);
  });

  it("behind Traefik, refuses a client that adds X-Original-URI naming its own domain beside Traefik's path to another", async () => {
    const res = await ask("traefik", "/auth", { "X-Forwarded-Method": "GET", "X-Forwarded-Uri": other, "X-Original-Method": "GET", "X-Original-URI": own });
    expect(verdict(res)).toBe(`401 ${SCOPE}`);
  });

  it("behind nginx, refuses a client that adds X-Forwarded-Uri naming its own domain beside nginx's path to another", async () => {
    const res = await ask("nginx", "/auth", { "X-Original-Method": "GET", "X-Original-URI": other, "X-Forwarded-Method": "GET", "X-Forwarded-Uri": own });
    expect(verdict(res)).toBe(`401 ${SCOPE}`);
  });

  it("behind Envoy, judges the path after /auth whatever X-Original-URI or X-Forwarded-Uri say", async () => {
    const res = await ask("envoy", `/auth${other}`, { "X-Original-URI": own, "X-Forwarded-Uri": own, "X-Original-Method": "GET", "X-Forwarded-Method": "GET" });
    expect(verdict(res)).toBe(`401 ${SCOPE}`);
    // Nor does the method come from another family's header: an application key's configuration is GET-only.
    const app = await supertest(by.envoy.app).put(`/auth/applications/${acme.application.name}`).set("Authorization", `Bearer ${acme.keys.application}`)
      .set("X-Original-Method", "GET").set("X-Forwarded-Method", "GET");
    expect(verdict(app)).toBe(`401 ${SCOPE}`);
  });

  it("takes the method from the gateway's family only", async () => {
    const app = (gateway: AuthGateway, headers: Record<string, string>) =>
      supertest(by[gateway].app).get("/auth").set("Authorization", `Bearer ${acme.keys.application}`).set(headers);
    const config = `/applications/${acme.application.name}`;
    expect(verdict(await app("nginx", { "X-Original-Method": "PUT", "X-Original-URI": config, "X-Forwarded-Method": "GET", "X-Forwarded-Uri": config }))).toBe(`401 ${SCOPE}`);
    expect(verdict(await app("traefik", { "X-Forwarded-Method": "PUT", "X-Forwarded-Uri": config, "X-Original-Method": "GET", "X-Original-URI": config }))).toBe(`401 ${SCOPE}`);
  });

  it("answers 400 bad_request, with the JSON body, to a request without its gateway's path header, the other family's notwithstanding", async () => {
    const cases: [AuthGateway, Record<string, string>, string][] = [
      ["nginx", {}, "x-original-uri"],
      ["nginx", { "X-Forwarded-Method": "GET", "X-Forwarded-Uri": own }, "x-original-uri"],
      ["nginx", { "X-Original-Method": "GET" }, "x-original-uri"],
      ["traefik", {}, "x-forwarded-uri"],
      ["traefik", { "X-Original-Method": "GET", "X-Original-URI": own }, "x-forwarded-uri"],
    ];
    for (const [gateway, headers, named] of cases) {
      for (const url of ["/auth", `/auth${own}`]) {
        const res = await ask(gateway, url, headers);
        expect(res.status, `${gateway} ${url} ${JSON.stringify(headers)}`).toBe(400);
        expect(res.headers["content-type"]).toMatch(/^application\/json/);
        expect(res.body).toMatchObject({ status: 400, error: "bad_request", message: expect.stringContaining(named) });
      }
    }
    // Without a token, the 401 comes first, as for any other credential-less request.
    expect((await supertest(svc.app).get("/auth")).status).toBe(401);
  });

  it("refuses a second copy of the gateway's path header, which only a client could have added", async () => {
    // supertest folds repeated headers into one; a raw request sends both lines, as a client can.
    const server = await listen(by.traefik.app, 0, "127.0.0.1");
    try {
      const { hostname, port } = new URL(server.url);
      const status = await new Promise<number>((resolve, reject) => {
        const headers = ["Authorization", `Bearer ${acme.keys.domain}`, "X-Forwarded-Uri", own, "X-Forwarded-Uri", other];
        request({ hostname, port, path: "/auth", headers }, (res) => resolve(res.resume().statusCode ?? 0)).on("error", reject).end();
      });
      expect(status).toBe(400);
    } finally {
      await server.close(0);
    }
  });
});
