import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpWebhookClient } from "../../src/services/webhooks/webhook-client.ts";
import { systemResolver, type Resolver } from "../../src/services/webhooks/webhook-settings.ts";
import { fakeClock } from "../support/clock.ts";
import { startService, type TestService } from "../support/service.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Webhooks cannot be pointed at keyplane's own machine or networks (docs/webhooks.md, "Addresses"):
// every spelling of such an address is refused when a webhook is created or changed, and again at each
// attempt, after the name is resolved, without connecting; the connection goes to the address checked.
const names: Record<string, string[]> = {
  "public.example": ["93.184.216.34"],
  "intranet.example": ["10.1.2.3"],
  "mixed.example": ["93.184.216.34", "192.168.7.7"],
  "mapped.example": ["::ffff:127.0.0.1"],
  "metadata.example": ["169.254.169.254"],
  // Blocks the IANA special-purpose registries do not mark globally reachable, and IPv6 forms carrying such an IPv4 address.
  "ietf.example": ["192.0.0.1"],
  "bench.example": ["198.18.0.1"],
  "class-e.example": ["240.0.0.1"],
  "discard.example": ["100::1"],
  "ietf6.example": ["2001:2::1"],
  "translated.example": ["::ffff:0:a00:1"],
  "nat64.example": ["64:ff9b::7f00:1"],
  "local-nat64.example": ["64:ff9b:1::808:808"],
  "sixtofour.example": ["2002:a00:1::1"],
  "teredo.example": ["2001:0:808:808::80ff:fffe"],
};
/** The tests' DNS: their names, else the system's (localhost). */
const resolver: Resolver = async (host) => names[host] ?? systemResolver(host);

describe("webhook addresses", () => {
  let svc: TestService;
  let acme: Tenant;
  let receiver: Receiver;
  const time = fakeClock();

  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startService("pglite", { clock: time.clock, webhooks: { allowHttp: true, allowPrivate: false, resolve: resolver, sender: { random: () => 0.5, pollMs: 3_600_000 } } });
    acme = await createTenant(svc, "acme");
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });

  it.each([
    ["https://127.0.0.1/hook", "loopback"],
    ["https://127.9.9.9/hook", "loopback"],
    ["https://2130706433/hook", "loopback"],
    ["https://0x7f000001/hook", "loopback"],
    ["https://0x7f.0.0.1/hook", "loopback"],
    ["https://0177.0.0.1/hook", "loopback"],
    ["https://017700000001/hook", "loopback"],
    ["https://[::1]/hook", "loopback"],
    ["https://[::ffff:127.0.0.1]/hook", "loopback"],
    ["https://[::ffff:7f00:1]/hook", "loopback"],
    ["https://10.0.0.1/hook", "private"],
    ["https://172.16.5.4/hook", "private"],
    ["https://192.168.0.1/hook", "private"],
    ["https://3232235521/hook", "private"],
    ["https://[fd00::1]/hook", "private"],
    ["https://[::ffff:192.168.0.1]/hook", "private"],
    ["https://169.254.169.254/latest/meta-data/", "link-local"],
    ["https://[fe80::1]/hook", "link-local"],
    ["https://0.0.0.0/hook", "unspecified"],
    ["https://0/hook", "unspecified"],
    ["https://[::]/hook", "unspecified"],
    ["https://localhost/hook", "loopback"],
    ["https://intranet.example/hook", "private"],
    ["https://mixed.example/hook", "private"],
    ["https://mapped.example/hook", "loopback"],
    ["https://metadata.example/hook", "link-local"],
    ["https://192.0.0.1/hook", "IETF protocol"],
    ["https://198.18.0.1/hook", "benchmarking"],
    ["https://198.19.255.254/hook", "benchmarking"],
    ["https://240.0.0.1/hook", "reserved"],
    ["https://[100::1]/hook", "discard-only"],
    ["https://[2001:2::1]/hook", "benchmarking"],
    ["https://[2001:db8::1]/hook", "documentation"],
    ["https://[::ffff:0:a00:1]/hook", "private"],
    ["https://[64:ff9b::7f00:1]/hook", "loopback"],
    ["https://[64:ff9b:1::808:808]/hook", "local NAT64"],
    ["https://[2002:a00:1::1]/hook", "private"],
    ["https://[2002:7f00:1::]/hook", "loopback"],
    ["https://[2001:0:808:808::80ff:fffe]/hook", "loopback"],
    ["https://ietf.example/hook", "IETF protocol"],
    ["https://bench.example/hook", "benchmarking"],
    ["https://class-e.example/hook", "reserved"],
    ["https://discard.example/hook", "discard-only"],
    ["https://ietf6.example/hook", "benchmarking"],
    ["https://translated.example/hook", "private"],
    ["https://nat64.example/hook", "loopback"],
    ["https://local-nat64.example/hook", "local NAT64"],
    ["https://sixtofour.example/hook", "private"],
    ["https://teredo.example/hook", "loopback"],
  ])("refuses %s (%s) when created and when changed to", async (url, why) => {
    const created = await svc.as(acme.keys.customer).post("/webhooks", { url });
    expect(created.status, JSON.stringify(created.body)).toBe(400);
    expect(created.body).toMatchObject({ error: "bad_request", message: expect.stringContaining(`a ${why} address`) });
    const hook = (await svc.as(acme.keys.customer).post("/webhooks", { url: "https://public.example/hook" })).body as { id: number };
    const changed = await svc.as(acme.keys.customer).put(`/webhooks/${hook.id}`, { url });
    expect(changed.status).toBe(400);
    expect((await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}`)).body).toMatchObject({ url: "https://public.example/hook" });
    await svc.as(acme.keys.customer).delete(`/webhooks/${hook.id}`);
  });

  it("takes a public address, the globally reachable ones inside refused blocks, and a name that does not resolve yet (each attempt resolves it again)", async () => {
    for (const url of ["https://public.example/hook", "https://93.184.216.34/hook", "https://not-yet.invalid/hook", "https://192.0.0.9/hook", "https://[2001:1::1]/hook", "https://[64:ff9b::808:808]/hook"]) {
      const res = await svc.as(acme.keys.customer).post("/webhooks", { url, events: ["key.leaked"] });
      expect(res.status, url).toBe(201);
      await svc.as(acme.keys.customer).delete(`/webhooks/${(res.body as { id: number }).id}`);
    }
  });

  it("refuses at the attempt a name that resolves to a refused address by then, without connecting", async () => {
    names["rebind.example"] = ["93.184.216.34"];
    const hook = (await svc.as(acme.keys.customer).post("/webhooks", { url: `http://rebind.example:${receiver.port}/hook`, events: ["key.created"] })).body as { id: number };
    names["rebind.example"] = ["127.0.0.1"];
    await svc.as(acme.keys.customer).post("/keys", { name: "rebound" });
    await svc.webhooks.drain();
    const [delivery] = (await svc.as(acme.keys.customer).get(`/webhooks/${hook.id}/deliveries`)).body as { state: string; attempts: { status: number | null; error: string }[] }[];
    expect(delivery).toMatchObject({ state: "pending", attempts: [{ status: null, error: "refused: rebind.example resolves to a loopback address (127.0.0.1)" }] });
    expect(receiver.received).toHaveLength(0);
    await svc.as(acme.keys.customer).delete(`/webhooks/${hook.id}`);
  });

  it("refuses at the attempt every address form, without connecting; and connects to the address it checked", async () => {
    const client = httpWebhookClient({ allowHttp: true, allowPrivate: false, resolve: resolver });
    const port = receiver.port;
    for (const host of ["127.0.0.1", "2130706433", "0x7f.1", "[::ffff:127.0.0.1]", "localhost", "mapped.example", "intranet.example",
      "[2002:7f00:1::]", "[64:ff9b::7f00:1]", "teredo.example", "nat64.example", "198.18.0.1", "bench.example", "[100::1]", "discard.example"]) {
      const outcome = await client.send({ url: `http://${host}:${port}/hook`, headers: {}, body: "{}" });
      expect(outcome, host).toMatchObject({ error: expect.stringMatching(/^refused: .*(loopback|private|benchmarking|discard-only) address/) });
    }
    client.close();
    expect(receiver.received).toHaveLength(0);

    // With private addresses allowed, a name the system cannot resolve reaches the receiver: the
    // connection went to the address the check saw, not to another lookup's.
    names["receiver.example"] = ["127.0.0.1"];
    const allowed = httpWebhookClient({ allowHttp: true, allowPrivate: true, resolve: resolver });
    expect(await allowed.send({ url: `http://receiver.example:${port}/checked`, headers: {}, body: "{}" })).toMatchObject({ status: 204 });
    allowed.close();
    expect(receiver.received.map((r) => [r.path, r.headers.host])).toEqual([["/checked", `receiver.example:${port}`]]);
  });

  it("refuses http unless allowed", async () => {
    const strict = httpWebhookClient({ allowHttp: false, allowPrivate: true, resolve: resolver });
    expect(await strict.send({ url: `http://127.0.0.1:${receiver.port}/`, headers: {}, body: "{}" })).toEqual({ error: expect.stringMatching(/^refused: url must be https/) });
    strict.close();
  });
});
