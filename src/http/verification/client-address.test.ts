import { describe, expect, it } from "vitest";
import { clientOf, parseTrustedProxies } from "./client-address.ts";

describe("clientOf", () => {
  const trusted = parseTrustedProxies("10.0.0.0/8, 192.168.1.1, fd00::/8, ::1");
  const cases: [string, string | undefined, string | string[] | undefined, string][] = [
    ["an untrusted peer is the client, whatever it forwards", "203.0.113.9", "198.51.100.1", "203.0.113.9"],
    ["a trusted peer without X-Forwarded-For is the client", "10.1.2.3", undefined, "10.1.2.3"],
    ["a trusted peer: the right-most forwarded address", "10.1.2.3", "198.51.100.1", "198.51.100.1"],
    ["addresses left of the first untrusted one are not believed", "10.1.2.3", "1.1.1.1, 198.51.100.1", "198.51.100.1"],
    ["trusted hops are skipped from the right", "10.1.2.3", "198.51.100.1, 192.168.1.1, 10.9.9.9", "198.51.100.1"],
    ["all hops trusted: the left-most", "10.1.2.3", "10.0.0.7, 10.0.0.8", "10.0.0.7"],
    ["several headers are one list", "10.1.2.3", ["198.51.100.1", "10.0.0.8"], "198.51.100.1"],
    ["an IPv4-mapped peer is its IPv4 address", "::ffff:10.1.2.3", "198.51.100.1", "198.51.100.1"],
    ["an IPv4-mapped untrusted peer", "::ffff:203.0.113.9", undefined, "203.0.113.9"],
    ["IPv6 CIDR", "fd12::1", "2001:db8::5", "2001:db8::5"],
    ["IPv6 address", "::1", "2001:db8::5", "2001:db8::5"],
    ["IPv6 untrusted", "2001:db8::1", "198.51.100.1", "2001:db8::1"],
    ["a hop that is no address is the client's word, taken as such", "10.1.2.3", "garbage", "garbage"],
    ["an empty header leaves the peer", "10.1.2.3", "", "10.1.2.3"],
  ];
  it.each(cases)("%s", (_name, peer, forwarded, expected) => {
    expect(clientOf(peer, forwarded, trusted)).toBe(expected);
  });

  it("trusts no one by default", () => {
    expect(clientOf("127.0.0.1", "198.51.100.1", parseTrustedProxies(undefined))).toBe("127.0.0.1");
  });
});

describe("parseTrustedProxies", () => {
  it.each(["10.0.0.1", "10.0.0.0/8", "::1", "2001:db8::/32", " 10.0.0.1 , ::1 ", "0.0.0.0/0", ""])("takes %j", (text) => {
    expect(() => parseTrustedProxies(text)).not.toThrow();
  });
  it.each(["10.0.0", "10.0.0.0/33", "::1/129", "10.0.0.0/8/1", "10.0.0.0/x", "host.example", "10.0.0.0/ 8"])("refuses %j", (text) => {
    expect(() => parseTrustedProxies(text)).toThrow(/neither an IP address nor a CIDR/);
  });
});
