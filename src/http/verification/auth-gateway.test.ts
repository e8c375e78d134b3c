import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import { AUTH_GATEWAYS, originalRequestReader, type AuthGateway } from "./auth-gateway.ts";

// Each gateway's reader takes its own family's headers and nothing else (docs/gateways.md).
function ask(gateway: AuthGateway, method: string, url: string, raw: [string, string][]): string {
  const headers: IncomingHttpHeaders = {};
  const headersDistinct: Record<string, string[]> = {};
  for (const [name, value] of raw) {
    const key = name.toLowerCase();
    // As Node joins a repeated header that is not one of its known singletons.
    headers[key] = headers[key] === undefined ? value : `${String(headers[key])}, ${value}`;
    (headersDistinct[key] ??= []).push(value);
  }
  const original = originalRequestReader(gateway)({ method, url, headers, headersDistinct });
  return original === undefined ? "missing" : `${original.method} ${original.path}`;
}

const NGINX: [string, string][] = [["X-Original-Method", "DELETE"], ["X-Original-URI", "/customers/acme/x?y=1"]];
const TRAEFIK: [string, string][] = [["X-Forwarded-Method", "post"], ["X-Forwarded-Uri", "/domains/d/calls?x"]];

describe("originalRequestReader", () => {
  const cases: [string, AuthGateway, string, string, [string, string][], string][] = [
    ["nginx", "nginx", "GET", "/auth", NGINX, "DELETE /customers/acme/x"],
    ["nginx without a method: the request's own", "nginx", "PUT", "/auth", [["X-Original-URI", "/a"]], "PUT /a"],
    ["nginx ignores Traefik's headers beside its own", "nginx", "GET", "/auth", [...NGINX, ...TRAEFIK], "DELETE /customers/acme/x"],
    ["nginx ignores Traefik's headers alone", "nginx", "GET", "/auth", TRAEFIK, "missing"],
    ["nginx ignores the path after /auth", "nginx", "GET", "/auth/customers/acme/x", [], "missing"],
    ["nginx with an empty path header", "nginx", "GET", "/auth", [["X-Original-URI", ""]], "missing"],
    ["nginx with the path header twice", "nginx", "GET", "/auth", [["X-Original-URI", "/domains/own/x"], ["X-Original-URI", "/domains/other/x"]], "missing"],
    ["traefik", "traefik", "GET", "/auth", TRAEFIK, "POST /domains/d/calls"],
    ["traefik ignores nginx's headers beside its own", "traefik", "GET", "/auth", [...NGINX, ...TRAEFIK], "POST /domains/d/calls"],
    ["traefik ignores nginx's headers alone", "traefik", "GET", "/auth", NGINX, "missing"],
    ["traefik ignores the path after /auth", "traefik", "GET", "/auth/e", [], "missing"],
    ["envoy: the path after /auth", "envoy", "PATCH", "/auth/customers/acme/invoices?id=1", [], "PATCH /customers/acme/invoices"],
    ["envoy ignores both families' headers", "envoy", "GET", "/auth/domains/own/x", [...NGINX, ...TRAEFIK], "GET /domains/own/x"],
    ["envoy at the root", "envoy", "GET", "/auth", [], "GET /"],
    ["envoy at the root with a query", "envoy", "GET", "/auth?x=/customers", [], "GET /"],
    ["envoy with a trailing slash", "envoy", "HEAD", "/auth/", [], "HEAD /"],
  ];
  it.each(cases)("%s", (_name, gateway, method, url, headers, expected) => {
    expect(ask(gateway, method, url, headers)).toBe(expected);
  });

  it("knows exactly the three gateways", () => {
    expect(AUTH_GATEWAYS).toEqual(["nginx", "traefik", "envoy"]);
  });
});
