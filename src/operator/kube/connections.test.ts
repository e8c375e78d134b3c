import { KubeConfig, type RequestContext } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { reuseConnections } from "./connections.ts";

// A CA and a client certificate in the kubeconfig: what makes client-node build an undici Agent (one
// with TLS options) for a request. The PEM need not be valid: nothing connects here.
function kubeConfig(cert = "client-cert"): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:6443", caData: Buffer.from("ca").toString("base64") }],
    users: [{ name: "u", certData: Buffer.from(cert).toString("base64"), keyData: Buffer.from("key").toString("base64") }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

async function dispatcherOf(kc: KubeConfig): Promise<unknown> {
  let dispatcher: unknown;
  const context = { setHeaderParam: () => {}, setDispatcher: (d: unknown) => (dispatcher = d) } as unknown as RequestContext;
  await kc.applySecurityAuthentication(context);
  return dispatcher;
}

describe("reuseConnections", () => {
  it("is needed: the client makes a new dispatcher, so a new connection, for every request", async () => {
    const kc = kubeConfig();
    const first = await dispatcherOf(kc);
    expect(first).toBeDefined();
    expect(await dispatcherOf(kc)).not.toBe(first);
  });

  it("hands every request the same dispatcher for the same cluster and credentials", async () => {
    const kc = reuseConnections(kubeConfig());
    const first = await dispatcherOf(kc);
    expect(first).toBeDefined();
    expect(await dispatcherOf(kc)).toBe(first);
    expect(reuseConnections(kc)).toBe(kc);
    expect(await dispatcherOf(kc)).toBe(first);
  });

  it("gives other credentials a dispatcher of their own", async () => {
    const kc = reuseConnections(kubeConfig("one"));
    const first = await dispatcherOf(kc);
    (kc.users[0] as { certData?: string }).certData = Buffer.from("two").toString("base64");
    expect(await dispatcherOf(kc)).not.toBe(first);
  });
});
