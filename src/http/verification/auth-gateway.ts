import type { IncomingMessage } from "node:http";

// Where /auth reads the request a gateway asks about (docs/gateways.md, "Which gateway"): from one
// gateway's headers, named by KEYPLANE_AUTH_GATEWAY, and never from another's. Gateways forward the
// client's own headers unless told otherwise, so a second family read as a fallback (or ahead of the
// gateway's own) would let a client name the path that is judged while the gateway passes another.

export const AUTH_GATEWAYS = ["nginx", "traefik", "envoy"] as const;
export type AuthGateway = (typeof AUTH_GATEWAYS)[number];

/** Where /auth starts; Envoy's ext_authz puts the original path after it (`path_prefix: /auth`). */
export const AUTH = /^\/auth(?=[/?]|$)/;

export interface OriginalRequest {
  method: string;
  /** Without its query. */
  path: string;
}

/**
 * The original request, or `undefined` when the gateway's path header is missing, empty or given twice
 * (a gateway that sets it sends one; two mean a client's copy got through beside it).
 */
export type OriginalRequestReader = (req: Pick<IncomingMessage, "method" | "url" | "headers" | "headersDistinct">) => OriginalRequest | undefined;

/** The header names each gateway sets; Envoy sends the original request as its own. */
export const GATEWAY_HEADERS = {
  nginx: { method: "x-original-method", uri: "x-original-uri" },
  traefik: { method: "x-forwarded-method", uri: "x-forwarded-uri" },
} as const;

/** The reader of one gateway, chosen once: /auth is on every request's path through a gateway. */
export function originalRequestReader(gateway: AuthGateway): OriginalRequestReader {
  if (gateway === "envoy") return (req) => requestOf(req.method ?? "GET", (req.url ?? "").replace(AUTH, ""));
  const names = GATEWAY_HEADERS[gateway];
  return (req) => {
    const uri = req.headers[names.uri];
    // Node joins repeated headers with ", ", which no request-target holds (a space is not allowed in one).
    if (typeof uri !== "string" || uri === "" || (uri.includes(", ") && (req.headersDistinct[names.uri]?.length ?? 0) > 1)) return undefined;
    const method = req.headers[names.method];
    return requestOf(typeof method === "string" && method !== "" ? method : (req.method ?? "GET"), uri);
  };
}

function requestOf(method: string, uri: string): OriginalRequest {
  const query = uri.indexOf("?");
  const path = query === -1 ? uri : uri.slice(0, query);
  return { method: method.toUpperCase(), path: path === "" ? "/" : path };
}
