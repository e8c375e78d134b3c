import { describe, expect, it } from "vitest";
import { cidrContains, parseAddress, parseCidr } from "./cidr.ts";

// From docs/api.md ("Key policy"): `ips` are IPv4/IPv6 addresses or CIDRs; a bare address is a /32 or
// /128; a client's IPv4-mapped IPv6 address is its IPv4 address.
function matches(entry: string, client: string): boolean {
  const cidr = parseCidr(entry);
  const address = parseAddress(client);
  if (!cidr.ok || address === undefined) throw new Error(`test input: ${entry} or ${client} does not parse`);
  return cidrContains(cidr.value, address);
}

describe("IPv4 entries", () => {
  it.each([
    ["the first address of a /24", "203.0.113.0/24", "203.0.113.0", true],
    ["the last address of a /24", "203.0.113.0/24", "203.0.113.255", true],
    ["just below a /24", "203.0.113.0/24", "203.0.112.255", false],
    ["just above a /24", "203.0.113.0/24", "203.0.114.0", false],
    ["/0: the lowest address", "0.0.0.0/0", "0.0.0.0", true],
    ["/0: the highest address", "0.0.0.0/0", "255.255.255.255", true],
    ["/0 covers no IPv6 address", "0.0.0.0/0", "2001:db8::1", false],
    ["/32: the address itself", "198.51.100.7/32", "198.51.100.7", true],
    ["/32: its neighbour", "198.51.100.7/32", "198.51.100.8", false],
    ["a bare address is a /32", "198.51.100.7", "198.51.100.7", true],
    ["a bare address is not its /24", "198.51.100.7", "198.51.100.6", false],
    ["/1, upper half, its first address", "128.0.0.0/1", "128.0.0.0", true],
    ["/1, upper half, its last address", "128.0.0.0/1", "255.255.255.255", true],
    ["/1, upper half, the lower half's last address", "128.0.0.0/1", "127.255.255.255", false],
    ["the highest address as a /32", "255.255.255.255/32", "255.255.255.255", true],
    ["/31 holds two addresses", "192.0.2.0/31", "192.0.2.1", true],
    ["/31 holds only two", "192.0.2.0/31", "192.0.2.2", false],
    ["host bits in the entry are ignored", "203.0.113.5/24", "203.0.113.200", true],
    ["a mapped client is its IPv4 address", "10.0.0.0/8", "::ffff:10.1.2.3", true],
    ["a mapped client in hex groups", "10.0.0.0/8", "::ffff:a01:203", true],
    ["a mapped client outside", "10.0.0.0/8", "::ffff:11.0.0.1", false],
    ["a mapped entry covers the plain IPv4 client", "::ffff:203.0.113.0/120", "203.0.113.9", true],
    ["a mapped entry covers the mapped client", "::ffff:203.0.113.0/120", "::ffff:203.0.113.9", true],
    ["a mapped entry, outside", "::ffff:203.0.113.0/120", "203.0.114.1", false],
  ])("%s: %s against %s", (_name, entry, client, expected) => expect(matches(entry, client)).toBe(expected));
});

describe("IPv6 entries", () => {
  it.each([
    ["the first address of a /32", "2001:db8::/32", "2001:db8::", true],
    ["the last address of a /32", "2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true],
    ["just above a /32", "2001:db8::/32", "2001:db9::", false],
    ["just below a /32", "2001:db8::/32", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false],
    ["/0: the lowest address", "::/0", "::", true],
    ["/0: the highest address", "::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true],
    ["/0 covers no IPv4 client", "::/0", "203.0.113.7", false],
    ["/0 covers no mapped client (it is IPv4)", "::/0", "::ffff:203.0.113.7", false],
    ["/128: the address itself", "::1/128", "::1", true],
    ["/128: its neighbour", "::1/128", "::2", false],
    ["a bare address is a /128, in any spelling", "2001:DB8::1", "2001:db8:0:0:0:0:0:1", true],
    ["a bare address is not its neighbour", "2001:db8::1", "2001:db8::1:1", false],
    ["the unspecified address", "::", "::", true],
    ["a /10, the last address", "fe80::/10", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true],
    ["a /10, just above", "fe80::/10", "fec0::", false],
    ["a /65 splits the second half", "2001:db8::8000:0:0:0/65", "2001:db8::ffff:0:0:1", true],
    ["a /65, the other side", "2001:db8::8000:0:0:0/65", "2001:db8::7fff:0:0:1", false],
    ["an embedded IPv4 tail, not mapped", "2001:db8::1.2.3.4", "2001:db8::102:304", true],
    ["seven groups then ::", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0", true],
    [":: then seven groups", "::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8", true],
  ])("%s: %s against %s", (_name, entry, client, expected) => expect(matches(entry, client)).toBe(expected));
});

describe("malformed entries are refused with a reason", () => {
  it.each([
    ["empty", "", /address or CIDR/],
    ["an IPv4 prefix above 32", "203.0.113.0/33", /0 to 32/],
    ["an IPv6 prefix above 128", "2001:db8::/129", /0 to 128/],
    ["an empty prefix", "203.0.113.0/", /0 to 32/],
    ["a negative prefix", "203.0.113.0/-1", /0 to 32/],
    ["a prefix with a leading zero", "203.0.113.0/08", /0 to 32/],
    ["two prefixes", "203.0.113.0/24/8", /0 to 32/],
    ["an octet above 255", "256.0.0.1", /address or CIDR/],
    ["three octets", "1.2.3", /address or CIDR/],
    ["five octets", "1.2.3.4.5", /address or CIDR/],
    ["an octet with a leading zero", "01.2.3.4", /address or CIDR/],
    ["a space before", " 1.2.3.4", /address or CIDR/],
    ["a space after", "1.2.3.4 ", /address or CIDR/],
    ["a host name", "example.com", /address or CIDR/],
    ["three colons", "2001:db8:::1", /address or CIDR/],
    ["two ::", "2001:db8::1::2", /address or CIDR/],
    ["nine groups", "1:2:3:4:5:6:7:8:9", /address or CIDR/],
    ["seven groups without ::", "1:2:3:4:5:6:7", /address or CIDR/],
    ["eight groups and ::", "1:2:3:4::5:6:7:8", /address or CIDR/],
    ["a group of five digits", "12345::", /address or CIDR/],
    ["a non-hex group", "g::1", /address or CIDR/],
    ["a lone leading colon", ":1::", /address or CIDR/],
    ["an IPv4 part before ::", "1.2.3.4::", /address or CIDR/],
    ["a short mapped IPv4 part", "::ffff:1.2.3", /address or CIDR/],
    ["brackets", "[::1]", /address or CIDR/],
    ["a zone id", "fe80::1%eth0", /zone id/],
    ["a zone id with a prefix", "fe80::1%25eth0/64", /zone id/],
  ])("%s: %j", (_name, entry, reason) => {
    const parsed = parseCidr(entry);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(reason);
  });
});

describe("client addresses", () => {
  it.each([
    ["a zone id", "fe80::1%eth0"],
    ["a CIDR", "203.0.113.0/24"],
    ["empty", ""],
    ["a host name", "localhost"],
  ])("%s (%j) is no address", (_name, text) => expect(parseAddress(text)).toBeUndefined());
});
