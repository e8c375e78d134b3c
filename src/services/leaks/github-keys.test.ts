import { generateKeyPairSync } from "node:crypto";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { GithubKeys, KEYS_REFETCH_MS } from "./github-keys.ts";

// The key list's fetching, with the fetch and the clock injected: one fetch however many ask at once,
// none more than once a minute, and a failure that keeps what was read before.
const pem = () => generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }) as string;
const list = (...ids: string[]) => ({ public_keys: ids.map((id) => ({ key_identifier: id, key: pem(), is_current: true })) });

function harness(answer: () => Response | Promise<Response>) {
  let now = Date.parse("2026-11-23T10:00:00Z");
  const calls: string[] = [];
  const fetch = (async (url: string | URL | Request) => {
    calls.push(String(url));
    return answer();
  }) as typeof globalThis.fetch;
  const keys = new GithubKeys({ url: "https://keys.test/list", clock: () => new Date(now), log: pino({ level: "silent" }), fetch });
  return { keys, calls, advance: (ms: number) => void (now += ms) };
}
const json = (value: unknown) => new Response(JSON.stringify(value), { headers: { "Content-Type": "application/json" } });

describe("GithubKeys", () => {
  it("fetches once for many concurrent look-ups, and not again for a known key", async () => {
    const { keys, calls } = harness(() => json(list("a", "b")));
    const found = await Promise.all(["a", "b", "a", "nobody", "b"].map((id) => keys.find(id)));
    expect(found.map((k) => k !== undefined)).toEqual([true, true, true, false, true]);
    expect(calls).toEqual(["https://keys.test/list"]);
    await keys.find("a");
    expect(calls).toHaveLength(1);
  });

  it("fetches for an unknown identifier only once the minute since the last fetch has passed", async () => {
    let published = list("a");
    const { keys, calls, advance } = harness(() => json(published));
    expect(await keys.find("b")).toBeUndefined();
    published = list("a", "b");
    advance(KEYS_REFETCH_MS - 1);
    expect(await keys.find("b")).toBeUndefined();
    expect(calls).toHaveLength(1);
    advance(1);
    expect(await keys.find("b")).toBeDefined();
    expect(calls).toHaveLength(2);
  });

  it.each([
    ["a 500", () => new Response("down", { status: 500 })],
    ["a list that is no JSON", () => new Response("<html>")],
    ["a list without a P-256 key", () => json({ public_keys: [] })],
    ["a network failure", () => Promise.reject(new TypeError("fetch failed"))],
  ])("after %s: keys read before still answer, an unknown identifier is 503", async (_name, failure) => {
    let fail = false;
    const { keys, advance } = harness(() => (fail ? failure() : json(list("a"))));
    expect(await keys.find("a")).toBeDefined();
    fail = true;
    advance(KEYS_REFETCH_MS);
    await expect(keys.find("z")).rejects.toMatchObject({ code: "unavailable", status: 503 });
    expect(await keys.find("a")).toBeDefined();
  });

  it("refuses, before any fetch, a report without both headers", async () => {
    const { keys, calls } = harness(() => json(list("a")));
    for (const [id, sig] of [[undefined, "x"], ["a", undefined], ["", "x"], ["i".repeat(257), "x"]] as const) {
      await expect(keys.verify(Buffer.from("[]"), id, sig)).rejects.toMatchObject({ code: "unauthorized" });
    }
    expect(calls).toEqual([]);
  });
});
