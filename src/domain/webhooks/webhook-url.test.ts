import { describe, expect, it } from "vitest";
import { checkWebhookUrl, refusedAddress, refusedAmong } from "./webhook-url.ts";

const strict = { allowHttp: false, allowPrivate: false };
const reason = (url: string, rules = strict) => {
  const check = checkWebhookUrl(url, rules);
  return check.ok ? undefined : check.reason;
};

describe("webhook URLs", () => {
  it.each([
    "https://hooks.acme.example/keyplane",
    "https://hooks.acme.example:8443/k?x=1",
    "https://93.184.216.34/hook",
    "https://[2606:2800:220:1::1]/hook",
    "https://192.0.0.9/",
    "https://[::ffff:8.8.8.8]/",
    "https://[2002:808:808::1]/",
    "https://8.8.8.8/",
    "https://172.32.0.1/",
  ])("takes %s", (url) => {
    expect(reason(url)).toBeUndefined();
  });

  it.each([
    ["http://hooks.acme.example/", /https/],
    ["ftp://hooks.acme.example/", /https/],
    ["hooks.acme.example/hook", /absolute URL/],
    ["https://user:pass@hooks.acme.example/", /user name or password/],
    ["https://hooks.acme.example/a b", /spaces/],
    [`https://hooks.acme.example/${"a".repeat(2048)}`, /2048/],
  ])("refuses %s", (url, why) => {
    expect(reason(url)).toMatch(why);
  });

  // Every spelling the WHATWG parser reads as a refused address: it normalises the host first.
  it.each([
    ["https://127.0.0.1/", "loopback"],
    ["https://127.1.2.3/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://0x7f000001/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://017700000001/", "loopback"],
    ["https://0177.0.0.1/", "loopback"],
    ["https://127.000.000.001/", "loopback"],
    ["https://[::1]/", "loopback"],
    ["https://[0:0:0:0:0:0:0:1]/", "loopback"],
    ["https://[::ffff:127.0.0.1]/", "loopback"],
    ["https://[::ffff:7f00:1]/", "loopback"],
    ["https://10.1.2.3/", "private"],
    ["https://172.16.0.1/", "private"],
    ["https://172.31.255.255/", "private"],
    ["https://192.168.1.1/", "private"],
    ["https://3232235777/", "private"],
    ["https://[fc00::1]/", "private"],
    ["https://[fd12:3456::1]/", "private"],
    ["https://[::ffff:10.0.0.1]/", "private"],
    ["https://169.254.169.254/latest/meta-data", "link-local"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[::ffff:169.254.169.254]/", "link-local"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://0/", "unspecified"],
    ["https://[::]/", "unspecified"],
    ["https://[::127.0.0.1]/", "reserved"],
    ["https://[64:ff9b::a00:1]/", "private"],
    ["https://224.0.0.1/", "multicast"],
    // Blocks the IANA special-purpose registries do not mark globally reachable, and IPv6 forms that carry such an IPv4 address.
    ["https://192.0.0.1/", "IETF protocol"],
    ["https://3221225473/", "IETF protocol"],
    ["https://198.18.0.1/", "benchmarking"],
    ["https://0xc6130001/", "benchmarking"],
    ["https://240.0.0.1/", "reserved"],
    ["https://203.0.113.7/", "documentation"],
    ["https://[100::1]/", "discard-only"],
    ["https://[2001:db8::1]/", "documentation"],
    ["https://[2001:2::1]/", "benchmarking"],
    ["https://[::ffff:0:7f00:1]/", "loopback"],
    ["https://[::ffff:0:127.0.0.1]/", "loopback"],
    ["https://[64:ff9b:1::a00:1]/", "local NAT64"],
    ["https://[2002:a9fe:a9fe::1]/", "link-local"],
    ["https://[2002:7f00:1::]/", "loopback"],
    ["https://[2001:0:808:808::80ff:fffe]/", "loopback"],
  ])("refuses %s: %s", (url, why) => {
    expect(reason(url)).toContain(`a ${why} address`);
    expect(reason(url, { allowHttp: false, allowPrivate: true })).toBeUndefined();
  });

  it("takes http only where allowed", () => {
    expect(reason("http://hooks.acme.example/", { allowHttp: true, allowPrivate: false })).toBeUndefined();
    expect(reason("http://127.0.0.1:9/", { allowHttp: true, allowPrivate: false })).toMatch(/loopback/);
    expect(reason("http://127.0.0.1:9/", { allowHttp: true, allowPrivate: true })).toBeUndefined();
  });
});

describe("resolved addresses", () => {
  it("are each judged, IPv4-mapped ones as IPv4", () => {
    expect(refusedAddress("93.184.216.34")).toBeUndefined();
    expect(refusedAddress("2606:2800:220:1::1")).toBeUndefined();
    expect(refusedAddress("198.18.7.7")).toBe("benchmarking");
    expect(refusedAddress("2002:c612:707::")).toBe("benchmarking");
    expect(refusedAddress("::ffff:192.168.0.1")).toBe("private");
    expect(refusedAddress("not-an-address")).toBe("not an IP address");
    expect(refusedAmong(["93.184.216.34", "127.0.0.1"])).toEqual({ address: "127.0.0.1", why: "loopback" });
    expect(refusedAmong(["93.184.216.34"])).toBeUndefined();
  });
});
