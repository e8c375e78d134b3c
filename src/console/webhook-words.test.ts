import { describe, expect, it } from "vitest";
import { WEBHOOK_TYPES } from "../domain/webhooks/webhook.ts";
import { requireReachable } from "../services/webhooks/webhooks.ts";

// The console's words for a refused webhook URL (public/webhooks/webhook-words.js), against the messages keyplane
// really sends: the browser suite runs keyplane with http and private addresses allowed (its receiver
// is on 127.0.0.1), so those refusals are seen here. The module is the browser's, plain JavaScript
// outside the project's types: it is loaded by a path the compiler does not follow.
const MODULE = new URL("./public/webhooks/webhook-words.js", import.meta.url).href;
const words = (await import(MODULE)) as {
  webhookRefusal(status: number | undefined, message: string): string;
  eventsInWords(events: string[]): string;
  EVENT_TYPES: readonly (readonly [string, string])[];
};

/** What keyplane answers for this URL under these rules, as the console receives it; undefined when it takes it. */
async function refusal(url: string, rules: { allowHttp: boolean; allowPrivate: boolean }, resolved: string[] = ["93.184.215.14"]) {
  const refused = await requireReachable({ webhooks: { ...rules, resolve: async () => resolved } }, url).then(() => undefined, (e: Error) => e.message);
  return refused === undefined ? undefined : words.webhookRefusal(400, refused);
}

const STRICT = { allowHttp: false, allowPrivate: false };
/** What a person should not have to read: a status, a setting's raw reason, jargon. */
const RAW = /\b[1-5]\d\d\b|Invalid request body|url's host|SSRF|request forgery/;

describe("the console's words for a refused webhook", () => {
  it.each([
    ["http where only https is allowed", "http://hooks.example.com/k", /sends webhooks to https URLs only.*KEYPLANE_WEBHOOK_ALLOW_HTTP=true/],
    ["a loopback address", "https://127.0.0.1:9000/k", /does not send webhooks to 127\.0\.0\.1: it is a loopback address.*KEYPLANE_WEBHOOK_ALLOW_PRIVATE=true/],
    ["a private address", "https://10.0.0.7/k", /to 10\.0\.0\.7: it is a private address/],
    ["an IPv6 link-local address", "https://[fe80::1]/k", /to fe80::1: it is a link-local address/],
    ["an unspecified address", "https://0.0.0.0/k", /it is an unspecified address/],
    ["a user name and password", "https://me:pw@hooks.example.com/k", /must not carry a user name or password/],
  ])("says why for %s", async (_, url, said) => {
    const shown = await refusal(url, STRICT);
    expect(shown).toMatch(said);
    expect(shown).not.toMatch(/Invalid request body|url's host|url must/);
  });

  it("says where a name leads when it resolves to a private address", async () => {
    expect(await refusal("https://hooks.internal.example/k", STRICT, ["192.168.1.20"]))
      .toMatch(/does not send webhooks to hooks\.internal\.example: the name leads to 192\.168\.1\.20, a private address/);
  });

  it("says nothing about addresses where keyplane is allowed them", async () => {
    expect(await refusal("http://127.0.0.1:9000/k", { allowHttp: true, allowPrivate: true })).toBeUndefined();
  });

  it("keeps the API's own message for anything else, and names a gone webhook as a webhook", () => {
    expect(words.webhookRefusal(400, "Invalid request body: description: Too big.")).toBe("Invalid request body: description: Too big.");
    expect(words.webhookRefusal(404, "That key is not among the keys you may manage")).toMatch(/^That webhook is not among the webhooks you may manage/);
    expect(words.webhookRefusal(404, "")).not.toMatch(RAW);
  });

  it("knows every message type keyplane sends, in its order, and says 'Every event' for all of them", () => {
    expect(words.EVENT_TYPES.map(([type]) => type)).toEqual([...WEBHOOK_TYPES]);
    expect(words.eventsInWords([...WEBHOOK_TYPES].reverse())).toBe("Every event");
    expect(words.eventsInWords(["key.rotated", "key.created"])).toBe("key.created, key.rotated");
  });
});
