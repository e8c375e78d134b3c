import { describe, expect, it } from "vitest";
import { notGlobalText as why, SPECIAL_BLOCKS } from "./special-addresses.ts";

// Each block of the IANA special-purpose registries that is not globally reachable is refused, at both
// of its ends; the globally reachable exceptions inside them are taken; an IPv6 form that carries an
// IPv4 address is judged by that address (docs/webhooks.md, "Addresses").
describe("addresses that are not globally reachable", () => {
  it.each([
    ["192.0.0.0", "IETF protocol"], ["192.0.0.255", "IETF protocol"], ["192.0.0.8", "IETF protocol"], ["192.0.0.11", "IETF protocol"],
    ["192.0.0.170", "IETF protocol"], ["192.0.0.171", "IETF protocol"],
    ["198.18.0.0", "benchmarking"], ["198.19.255.255", "benchmarking"],
    ["240.0.0.0", "reserved"], ["255.255.255.254", "reserved"], ["255.255.255.255", "broadcast"],
    ["192.0.2.1", "documentation"], ["198.51.100.1", "documentation"], ["203.0.113.1", "documentation"],
    ["192.88.99.1", "reserved"], ["100.64.0.1", "private"], ["100.127.255.255", "private"], ["0.1.2.3", "unspecified"],
    ["100::", "discard-only"], ["100::ffff:ffff:ffff:ffff", "discard-only"], ["100:0:0:1::1", "reserved"],
    ["2001::", "unspecified"], // Teredo, its server 0.0.0.0
    ["2001:1::4", "IETF protocol"], ["2001:2::1", "benchmarking"], ["2001:10::1", "reserved"], ["2001:1ff:ffff::1", "IETF protocol"],
    ["2001:db8::1", "documentation"], ["3fff::1", "documentation"], ["5f00::1", "SRv6 SID"],
    ["64:ff9b:1::808:808", "local NAT64"], ["fec0::1", "private"], ["ff02::1", "multicast"],
    ["::8.8.8.8", "reserved"], ["4000::1", "reserved"], ["1::1", "reserved"],
  ])("refuses %s (%s)", (address, kind) => {
    expect(why(address)).toBe(kind);
  });

  it.each([
    // IPv4-mapped and -translated, NAT64: the last 32 bits.
    ["::ffff:127.0.0.1", "loopback"], ["::ffff:0:127.0.0.1", "loopback"], ["::ffff:0:a00:1", "private"], ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::c0a8:101", "private"], ["64:ff9b::a9fe:a9fe", "link-local"], ["::ffff:0:c612:1", "benchmarking"],
    // 6to4: bits 16-47.
    ["2002:7f00:1::", "loopback"], ["2002:a00:1::1", "private"], ["2002:c0a8:101:1::1", "private"], ["2002:a9fe:a9fe::", "link-local"],
    ["2002:c000:1::", "IETF protocol"],
    // Teredo: the server's address (bits 32-63), and the client's, inverted in the last 32 bits.
    ["2001:0:808:808::80ff:fffe", "loopback"], ["2001:0:808:808:0:0:f5ff:fffe", "private"], ["2001:0:a00:1::f7f7:f7f7", "private"],
  ])("refuses %s, which carries a %s IPv4 address", (address, kind) => {
    expect(why(address)).toBe(kind);
  });

  it.each([
    "8.8.8.8", "1.1.1.1", "192.0.0.9", "192.0.0.10", "192.31.196.1", "192.175.48.6", "198.17.255.255", "198.20.0.0", "223.255.255.255",
    "100.63.255.255", "100.128.0.0", "2606:4700::1111", "2001:4860:4860::8888", "2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1",
    "2001:4:112::1", "2001:20::1", "2001:30::1", "2001:200::1", "2620:4f:8000::1",
    "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:0:808:808::f7f7:f7f7",
  ])("takes %s", (address) => {
    expect(why(address)).toBeUndefined();
  });

  it("names a source for every block, and each block once", () => {
    for (const b of SPECIAL_BLOCKS) expect(b.source.length, b.block).toBeGreaterThan(10);
    expect(new Set(SPECIAL_BLOCKS.map((b) => b.block)).size).toBe(SPECIAL_BLOCKS.length);
  });
});
