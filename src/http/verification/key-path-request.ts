import type { IncomingMessage } from "node:http";
import type { KeyPathRequest } from "../../services/verification/authenticate.ts";
import { clientAddress, type TrustedProxies } from "./client-address.ts";

/**
 * A request on keyplane's own key paths as authentication takes it: its client (who failures count
 * against), and what a key policy's restrictions judge there: the request's own Referer, method and
 * path (docs/api.md, "Key policy").
 */
export function keyPathRequest(req: IncomingMessage & { originalUrl?: string }, trusted: TrustedProxies): KeyPathRequest {
  const referrer = req.headers.referer;
  return { client: clientAddress(req, trusted), referrer, method: req.method, path: req.originalUrl ?? req.url };
}
