import type { IncomingMessage } from "node:http";
import { BlockList, isIP, type Socket } from "node:net";

// Who a request comes from, for failed-authentication throttling (docs/gateways.md, "Client
// address"): its peer, or, when the peer is a trusted proxy (KEYPLANE_TRUSTED_PROXIES), the
// right-most X-Forwarded-For address that is not itself trusted. Addresses left of that one are the
// client's own word and are never believed.
export type TrustedProxies = BlockList;

/** The trusted proxies of a comma-separated list of addresses and CIDRs, IPv4 or IPv6; throws on a bad entry. */
export function parseTrustedProxies(text: string | undefined): TrustedProxies {
  const list = new BlockList();
  for (const entry of (text ?? "").split(",").map((e) => e.trim()).filter(Boolean)) {
    const [address = "", prefix, extra] = entry.split("/");
    const family = isIP(address);
    const bits = prefix === undefined ? undefined : Number(prefix);
    const maxBits = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (bits !== undefined && !(Number.isInteger(bits) && bits >= 0 && bits <= maxBits && /^\d+$/.test(prefix!)))) {
      throw new Error(`"${entry}" is neither an IP address nor a CIDR`);
    }
    const type = family === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

/** An address as one spelling: an IPv4-mapped IPv6 address is its IPv4 address. */
function plain(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

function isTrusted(address: string, trusted: TrustedProxies): boolean {
  const family = isIP(address);
  return family !== 0 && trusted.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** The client of a connection's peer and the X-Forwarded-For header(s) it sent. */
export function clientOf(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  const address = plain(peer ?? "");
  return isTrusted(address, trusted) ? forwardedClient(address, forwardedFor, trusted) : address;
}

/** The client behind a trusted peer: the right-most address of X-Forwarded-For that is not trusted. */
function forwardedClient(peer: string, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  if (forwardedFor === undefined) return peer;
  const hops = [forwardedFor].flat().join(",").split(",").map((hop) => plain(hop.trim())).filter(Boolean);
  let client = peer;
  // Right to left: each hop was written by the one after it; the first untrusted one is the client.
  for (let i = hops.length - 1; i >= 0; i--) {
    client = hops[i]!;
    if (!isTrusted(client, trusted)) break;
  }
  return client;
}

// A connection's peer, judged once for all the requests it carries.
const PEER = Symbol("keyplane.peer");
type Judged = Socket & { [PEER]?: { address: string; trusted: boolean; by: TrustedProxies } };

/** The client of a request. */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies): string {
  const socket = req.socket as Judged;
  let peer = socket[PEER];
  if (peer?.by !== trusted) {
    const address = plain(socket.remoteAddress ?? "");
    peer = socket[PEER] = { address, trusted: isTrusted(address, trusted), by: trusted };
  }
  return peer.trusted ? forwardedClient(peer.address, req.headers["x-forwarded-for"], trusted) : peer.address;
}
