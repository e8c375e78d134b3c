import { cidrContains, parseAddress, parseBlock, type Address, type Cidr } from "../policy/restrictions/cidr.ts";

// Which addresses a webhook may reach (docs/webhooks.md, "Addresses"): those the IANA special-purpose
// address registries (IPv4 and IPv6, RFC 6890) mark globally reachable, and no other. Each row below is
// one block, with the registry or RFC it comes from; the most specific block that holds an address
// decides. A few rows are not in those registries and say where they come from instead: multicast, and,
// in IPv6, the whole space outside 2000::/3, which the IPv6 address space registry leaves unallocated
// or reserved (so that a block registered later is refused until this table says otherwise).
//
// A block that carries an IPv4 address (IPv4-mapped and -translated, NAT64, 6to4, Teredo) is judged by
// the IPv4 address it carries: a gateway or relay on the way passes the connection on to it.

/** How far an address of a block may be reached: anywhere, nowhere beyond its network, or as the IPv4 address it carries. */
type Reach = "global" | "local" | Carrier;
/** Where the IPv4 address sits: the last 32 bits; 6to4's bits 16-47; Teredo's server (bits 32-63) and client (the last 32, inverted). */
type Carrier = "last 32 bits" | "6to4" | "Teredo";

interface Block {
  block: string;
  /** The word for an address of it, in "a ... address". */
  kind: string;
  reach: Reach;
  /** The registry's name for it, and its RFC, or where the row comes from. */
  source: string;
}

const IANA4 = "IANA IPv4 Special-Purpose Address Registry";
const IANA6 = "IANA IPv6 Special-Purpose Address Registry";

export const SPECIAL_BLOCKS: readonly Block[] = [
  { block: "0.0.0.0/8", kind: "unspecified", reach: "local", source: `${IANA4}: "This network", RFC 791` },
  { block: "0.0.0.0/32", kind: "unspecified", reach: "local", source: `${IANA4}: "This host on this network", RFC 1122` },
  { block: "10.0.0.0/8", kind: "private", reach: "local", source: `${IANA4}: Private-Use, RFC 1918` },
  { block: "100.64.0.0/10", kind: "private", reach: "local", source: `${IANA4}: Shared Address Space, RFC 6598` },
  { block: "127.0.0.0/8", kind: "loopback", reach: "local", source: `${IANA4}: Loopback, RFC 1122` },
  { block: "169.254.0.0/16", kind: "link-local", reach: "local", source: `${IANA4}: Link Local, RFC 3927` },
  { block: "172.16.0.0/12", kind: "private", reach: "local", source: `${IANA4}: Private-Use, RFC 1918` },
  { block: "192.0.0.0/24", kind: "IETF protocol", reach: "local", source: `${IANA4}: IETF Protocol Assignments, RFC 6890` },
  { block: "192.0.0.0/29", kind: "IETF protocol", reach: "local", source: `${IANA4}: IPv4 Service Continuity Prefix, RFC 7335` },
  { block: "192.0.0.8/32", kind: "IETF protocol", reach: "local", source: `${IANA4}: IPv4 dummy address, RFC 7600` },
  { block: "192.0.0.9/32", kind: "anycast", reach: "global", source: `${IANA4}: Port Control Protocol Anycast, RFC 7723` },
  { block: "192.0.0.10/32", kind: "anycast", reach: "global", source: `${IANA4}: Traversal Using Relays around NAT Anycast, RFC 8155` },
  { block: "192.0.0.170/31", kind: "IETF protocol", reach: "local", source: `${IANA4}: NAT64/DNS64 Discovery, RFC 8880` },
  { block: "192.0.2.0/24", kind: "documentation", reach: "local", source: `${IANA4}: Documentation (TEST-NET-1), RFC 5737` },
  { block: "192.31.196.0/24", kind: "anycast", reach: "global", source: `${IANA4}: AS112-v4, RFC 7535` },
  { block: "192.52.193.0/24", kind: "anycast", reach: "global", source: `${IANA4}: AMT, RFC 7450` },
  // Deprecated (RFC 7526): the registry no longer says it is globally reachable.
  { block: "192.88.99.0/24", kind: "reserved", reach: "local", source: `${IANA4}: Deprecated (6to4 Relay Anycast), RFC 7526` },
  { block: "192.168.0.0/16", kind: "private", reach: "local", source: `${IANA4}: Private-Use, RFC 1918` },
  { block: "192.175.48.0/24", kind: "anycast", reach: "global", source: `${IANA4}: Direct Delegation AS112 Service, RFC 7534` },
  { block: "198.18.0.0/15", kind: "benchmarking", reach: "local", source: `${IANA4}: Benchmarking, RFC 2544` },
  { block: "198.51.100.0/24", kind: "documentation", reach: "local", source: `${IANA4}: Documentation (TEST-NET-2), RFC 5737` },
  { block: "203.0.113.0/24", kind: "documentation", reach: "local", source: `${IANA4}: Documentation (TEST-NET-3), RFC 5737` },
  { block: "224.0.0.0/4", kind: "multicast", reach: "local", source: "IANA IPv4 Multicast Address Space Registry, RFC 5771: not one host" },
  { block: "240.0.0.0/4", kind: "reserved", reach: "local", source: `${IANA4}: Reserved, RFC 1112` },
  { block: "255.255.255.255/32", kind: "broadcast", reach: "local", source: `${IANA4}: Limited Broadcast, RFC 8190` },

  { block: "::/0", kind: "reserved", reach: "local", source: "IANA IPv6 Address Space: outside 2000::/3, reserved by the IETF or unallocated" },
  { block: "2000::/3", kind: "global unicast", reach: "global", source: "IANA IPv6 Address Space: Global Unicast, RFC 4291" },
  { block: "::/128", kind: "unspecified", reach: "local", source: `${IANA6}: Unspecified Address, RFC 4291` },
  { block: "::1/128", kind: "loopback", reach: "local", source: `${IANA6}: Loopback Address, RFC 4291` },
  { block: "::ffff:0:0/96", kind: "IPv4-mapped", reach: "last 32 bits", source: `${IANA6}: IPv4-mapped Address, RFC 4291` },
  { block: "::ffff:0:0:0/96", kind: "IPv4-translated", reach: "last 32 bits", source: "IPv4-translated addresses, RFC 2765 (SIIT)" },
  { block: "64:ff9b::/96", kind: "NAT64", reach: "last 32 bits", source: `${IANA6}: IPv4-IPv6 Translat., RFC 6052` },
  // Where its IPv4 address sits depends on the prefix length the local translator uses: none can be read.
  { block: "64:ff9b:1::/48", kind: "local NAT64", reach: "local", source: `${IANA6}: Local-use IPv4/IPv6 Translation, RFC 8215` },
  { block: "100::/64", kind: "discard-only", reach: "local", source: `${IANA6}: Discard-Only Address Block, RFC 6666` },
  { block: "100:0:0:1::/64", kind: "reserved", reach: "local", source: `${IANA6}: Dummy IPv6 Prefix, RFC 9780` },
  { block: "2001::/23", kind: "IETF protocol", reach: "local", source: `${IANA6}: IETF Protocol Assignments, RFC 2928` },
  { block: "2001::/32", kind: "Teredo", reach: "Teredo", source: `${IANA6}: TEREDO, RFC 4380` },
  { block: "2001:1::1/128", kind: "anycast", reach: "global", source: `${IANA6}: Port Control Protocol Anycast, RFC 7723` },
  { block: "2001:1::2/128", kind: "anycast", reach: "global", source: `${IANA6}: Traversal Using Relays around NAT Anycast, RFC 8155` },
  { block: "2001:1::3/128", kind: "anycast", reach: "global", source: `${IANA6}: DNS-SD Service Registration Protocol Anycast, RFC 9665` },
  { block: "2001:2::/48", kind: "benchmarking", reach: "local", source: `${IANA6}: Benchmarking, RFC 5180` },
  { block: "2001:3::/32", kind: "AMT", reach: "global", source: `${IANA6}: AMT, RFC 7450` },
  { block: "2001:4:112::/48", kind: "anycast", reach: "global", source: `${IANA6}: AS112-v6, RFC 7535` },
  { block: "2001:10::/28", kind: "reserved", reach: "local", source: `${IANA6}: Deprecated (previously ORCHID), RFC 4843` },
  { block: "2001:20::/28", kind: "ORCHIDv2", reach: "global", source: `${IANA6}: ORCHIDv2, RFC 7343` },
  { block: "2001:30::/28", kind: "DET", reach: "global", source: `${IANA6}: Drone Remote ID Protocol Entity Tags (DETs) Prefix, RFC 9374` },
  { block: "2001:db8::/32", kind: "documentation", reach: "local", source: `${IANA6}: Documentation, RFC 3849` },
  { block: "2002::/16", kind: "6to4", reach: "6to4", source: `${IANA6}: 6to4, RFC 3056` },
  { block: "2620:4f:8000::/48", kind: "anycast", reach: "global", source: `${IANA6}: Direct Delegation AS112 Service, RFC 7534` },
  { block: "3fff::/20", kind: "documentation", reach: "local", source: `${IANA6}: Documentation, RFC 9637` },
  { block: "5f00::/16", kind: "SRv6 SID", reach: "local", source: `${IANA6}: Segment Routing (SRv6) SIDs, RFC 9602` },
  { block: "fc00::/7", kind: "private", reach: "local", source: `${IANA6}: Unique-Local, RFC 4193` },
  { block: "fe80::/10", kind: "link-local", reach: "local", source: `${IANA6}: Link-Local Unicast, RFC 4291` },
  { block: "fec0::/10", kind: "private", reach: "local", source: "Site-local, deprecated by RFC 3879" },
  { block: "ff00::/8", kind: "multicast", reach: "local", source: "IANA IPv6 Multicast Address Space Registry, RFC 4291: not one host" },
];

/** The table, each block parsed, most specific first: the first that holds an address decides. */
const COMPILED: readonly (Block & { cidr: Cidr; bits: number })[] = SPECIAL_BLOCKS
  .map((b) => {
    const cidr = parseBlock(b.block);
    if (!cidr) throw new Error(`bad block ${b.block}`);
    return { ...b, cidr, bits: Number(b.block.split("/")[1]) };
  })
  .sort((a, b) => b.bits - a.bits);

/** The IPv4 address an address of a carrying block holds, as many as it holds (Teredo: its server's and its client's). */
function carried(carrier: Carrier, value: bigint): number[] {
  const at = (shift: bigint) => Number((value >> shift) & 0xffffffffn);
  switch (carrier) {
    case "last 32 bits":
      return [at(0n)];
    case "6to4":
      return [at(80n)];
    case "Teredo":
      // The client's address is sent inverted, so that a NAT on the way does not rewrite it.
      return [at(64n), (~at(0n)) >>> 0];
  }
}

/** Why a webhook may not reach an address (a loopback, documentation... address), or undefined when it may. */
export function notGlobal(address: Address): string | undefined {
  const found = COMPILED.find((b) => cidrContains(b.cidr, address));
  if (!found || found.reach === "global") return undefined;
  if (found.reach === "local" || address.family === 4) return found.kind;
  for (const v4 of carried(found.reach, address.value)) {
    const why = notGlobal({ family: 4, value: v4 });
    if (why) return why;
  }
  return undefined;
}

/** The same for an address written as text; one that is none is refused too. */
export function notGlobalText(text: string): string | undefined {
  const address = parseAddress(text);
  return address ? notGlobal(address) : "not an IP address";
}
