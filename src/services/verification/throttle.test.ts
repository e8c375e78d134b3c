import { describe, expect, it } from "vitest";
import { Throttle } from "./throttle.ts";

function throttle(failuresPerMinute: number, capacity?: number) {
  let now = 0;
  const t = new Throttle({ failuresPerMinute, capacity, now: () => now });
  return { t, advance: (ms: number) => (now += ms), fail: (client: string, n: number) => { for (let i = 0; i < n; i++) t.fail(client); } };
}

describe("Throttle", () => {
  it("throttles a client once its failures exceed the limit within a minute, and no one else", () => {
    const { t, fail } = throttle(3);
    fail("10.0.0.1", 3);
    expect(t.retryAfter("10.0.0.1")).toBeUndefined();
    fail("10.0.0.1", 1);
    expect(t.retryAfter("10.0.0.1")).toBe(60);
    expect(t.retryAfter("10.0.0.2")).toBeUndefined();
  });

  it("lets go of a flood's failures as they age out, also with a limit in the hundreds of thousands", () => {
    const { t, fail, advance } = throttle(150_000);
    fail("c", 100_000); // t=0
    advance(30_000);
    fail("c", 100_000); // t=30 s: 200,000 in the minute, over the limit
    expect(t.retryAfter("c")).toBe(30);
    advance(30_001); // those at 0 have left the window
    expect(t.retryAfter("c")).toBeUndefined();
    fail("c", 50_001); // back over, by the failures at 30 s and these
    expect(t.retryAfter("c")).toBe(30);
  });

  it("counts in a sliding minute: Retry-After falls as failures age out, and the client is let go when under", () => {
    const { t, fail, advance } = throttle(2);
    fail("c", 1); // t=0
    advance(20_000);
    fail("c", 1); // t=20 s
    advance(10_000);
    fail("c", 1); // t=30 s: three in the minute, over 2
    expect(t.retryAfter("c")).toBe(30); // the failure at 0 leaves at 60 s
    advance(29_500);
    expect(t.retryAfter("c")).toBe(1);
    advance(500);
    expect(t.retryAfter("c")).toBeUndefined();
  });

  it("answers Retry-After in whole seconds from 1 to 60", () => {
    const cases: [number, number][] = [[0, 60], [1, 60], [999, 60], [1_000, 59], [59_001, 1], [59_999, 1]];
    for (const [after, expected] of cases) {
      const { t, fail, advance } = throttle(1);
      fail("c", 2);
      advance(after);
      expect(`${after} ms: ${t.retryAfter("c")}`).toBe(`${after} ms: ${expected}`);
    }
  });

  it("keeps at most `capacity` clients, however many fail", () => {
    const { t, fail } = throttle(60, 1_000);
    for (let i = 0; i < 100_000; i++) fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 1);
    expect(t.size).toBe(1_000);
  });

  it("keeps no more failure times per client than the limit needs", () => {
    const { t, fail, advance } = throttle(2);
    fail("c", 1_000);
    advance(59_999);
    // Were every failure kept, the client would stay throttled; only the last three count.
    expect(t.retryAfter("c")).toBe(1);
  });
});

describe("an IPv6 client", () => {
  const inside = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}:${(i + 1).toString(16)}:0:${((i * 7919) & 0xffff).toString(16)}:1`);

  it("is counted by its /64: 61 failures from 61 addresses of one /64 throttle the 62nd address, and another /64 is untouched", () => {
    const { t } = throttle(60);
    const addresses = inside("2001:4860:4860:1", 62);
    for (const address of addresses.slice(0, 61)) {
      expect(t.retryAfter(address)).toBeUndefined();
      t.fail(address);
    }
    expect(t.retryAfter(addresses[61]!)).toBe(60);
    expect(t.retryAfter("2001:4860:4860:1::")).toBe(60);
    expect(t.retryAfter("2001:4860:4860:2::1")).toBeUndefined();
    expect(t.retryAfter("2001:4860:4860:0:ffff:ffff:ffff:ffff")).toBeUndefined();
    expect(t.size).toBe(1);
  });

  it("is counted alike however its address is spelled; an IPv4-mapped one is its IPv4 address", () => {
    const { t, fail } = throttle(2);
    fail("2001:DB8:0:1::1", 1);
    fail("2001:0db8:0000:0001:ffff::9", 1);
    fail("2001:db8:0:1:0:0:0:2", 1);
    expect(t.retryAfter("2001:db8:0:1::abcd")).toBe(60);
    fail("::ffff:203.0.113.9", 2);
    fail("::ffff:cb00:7109", 1);
    expect(t.retryAfter("203.0.113.9")).toBe(60);
    expect(t.retryAfter("203.0.113.10")).toBeUndefined();
  });

  it("keeps an address it cannot read as it is", () => {
    const { t, fail } = throttle(1);
    fail("fe80::1%eth0", 2);
    expect(t.retryAfter("fe80::1%eth0")).toBe(60);
    expect(t.retryAfter("fe80::2%eth0")).toBeUndefined();
  });
});
