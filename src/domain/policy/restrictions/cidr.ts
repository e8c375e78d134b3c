import type { Parsed } from "../policy.ts";

// IP addresses and CIDRs for a policy's `ips` (docs/api.md, "Key policy"), parsed once into numbers:
// IPv4 as an unsigned 32-bit number, IPv6 as a 128-bit bigint. An IPv4-mapped IPv6 address
// (::ffff:203.0.113.7, what a dual-stack socket reports) is the IPv4 address it carries, so an IPv4
// entry covers a client however its address is spelled; `::/0` is every IPv6 address, not every address.

export type Address = { family: 4; value: number } | { family: 6; value: bigint };
export type Cidr = { family: 4; network: number; mask: number } | { family: 6; network: bigint; mask: bigint };

const MAPPED_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96

/** A client's address; undefined when it is not a plain IPv4 or IPv6 address. */
export function parseAddress(text: string): Address | undefined {
  const ip = parseIp(text);
  return ip === undefined ? undefined : unmapped(ip);
}

/** An entry of `ips`: an address (a /32 or /128) or a CIDR. Host bits below the prefix are ignored. */
export function parseCidr(text: string): Parsed<Cidr> {
  if (text.includes("%")) return { ok: false, reason: "must not carry a zone id (%...)" };
  const slash = text.indexOf("/");
  const ip = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (ip === undefined) return { ok: false, reason: "must be an IPv4 or IPv6 address or CIDR" };
  const bits = ip.family === 4 ? 32 : 128;
  let prefix = bits;
  if (slash !== -1) {
    const digits = text.slice(slash + 1);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(digits) || Number(digits) > bits) {
      return { ok: false, reason: `must have a prefix length from 0 to ${bits} after the /` };
    }
    prefix = Number(digits);
  }
  // A mapped CIDR that stays inside ::ffff:0:0/96 names IPv4 addresses, which clients are matched as.
  if (ip.family === 6 && prefix >= 96 && ip.value >> 32n === 0xffffn) {
    return { ok: true, value: cidr4(Number(ip.value & 0xffffffffn), prefix - 96) };
  }
  return { ok: true, value: ip.family === 4 ? cidr4(ip.value, prefix) : cidr6(ip.value, prefix) };
}

/** A block exactly as written, its family kept (::ffff:0:0/96 stays IPv6): for tables of address blocks. */
export function parseBlock(text: string): Cidr | undefined {
  const [address = "", prefix = ""] = text.split("/");
  const ip = parseIp(address);
  const bits = Number(prefix);
  if (ip === undefined || !/^[0-9]{1,3}$/.test(prefix) || bits > (ip.family === 4 ? 32 : 128)) return undefined;
  return ip.family === 4 ? cidr4(ip.value, bits) : cidr6(ip.value, bits);
}

export function cidrContains(cidr: Cidr, address: Address): boolean {
  if (cidr.family === 4) return address.family === 4 && (address.value & cidr.mask) >>> 0 === cidr.network;
  return address.family === 6 && (address.value & cidr.mask) === cidr.network;
}

function cidr4(value: number, prefix: number): Cidr {
  // A shift by 32 is a shift by 0 in JavaScript: /0 needs its own mask.
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { family: 4, network: (value & mask) >>> 0, mask };
}

function cidr6(value: bigint, prefix: number): Cidr {
  const mask = ((1n << BigInt(prefix)) - 1n) << BigInt(128 - prefix);
  return { family: 6, network: value & mask, mask };
}

function unmapped(ip: Address): Address {
  if (ip.family === 6 && ip.value >> 32n === 0xffffn) return { family: 4, value: Number(ip.value - MAPPED_PREFIX) };
  return ip;
}

function parseIp(text: string): Address | undefined {
  if (text.includes(":")) {
    const value = parseIpv6(text);
    return value === undefined ? undefined : { family: 6, value };
  }
  const value = parseIpv4(text);
  return value === undefined ? undefined : { family: 4, value };
}

/** Dotted decimal, four octets; a leading zero is refused, since some readers take it for octal. */
function parseIpv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = value * 256 + Number(part);
  }
  return value;
}

/** RFC 4291 2.2's text forms: eight groups, `::` for a run of zero groups, an IPv4 address as the last 32 bits. */
function parseIpv6(text: string): bigint | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const given = head.length + tail.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const groups = [...head, ...Array<number>(8 - given).fill(0), ...tail];
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/** The 16-bit groups of one side of `::`; the side that ends the address may end in an IPv4 address. */
function groupsOf(side: string, last: boolean): number[] | undefined {
  if (side === "") return [];
  const parts = side.split(":");
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (last && i === parts.length - 1 && part.includes(".")) {
      const v4 = parseIpv4(part);
      if (v4 === undefined) return undefined;
      groups.push(Math.floor(v4 / 65536), v4 % 65536);
    } else if (/^[0-9A-Fa-f]{1,4}$/.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}
