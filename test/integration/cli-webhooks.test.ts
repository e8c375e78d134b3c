import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliJson, runCli } from "../support/cli.ts";
import { startService, type TestService } from "../support/service.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// `keyplane webhooks` as a user runs it: the real command in its own process, against a real server.


describe("keyplane webhooks", () => {
  let svc: TestService;
  let server: Server;
  let url: string;
  let acme: Tenant;
  let receiver: Receiver;

  const keyplane = (args: string[], env: Record<string, string | undefined> = {}) =>
    runCli(["webhooks", ...args], { KEYPLANE_URL: url, KEYPLANE_TOKEN: acme.keys.customer, ...env });
  const json = async (args: string[]) => cliJson(await keyplane([...args, "-o", "json"]));

  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startService("pglite", { webhooks: { allowHttp: true, allowPrivate: true } });
    acme = await createTenant(svc, "acme");
    server = createServer(svc.app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await svc?.stop();
    await receiver?.close();
  });

  it("creates a webhook showing its secret once, lists, changes and deletes it", async () => {
    const created = await keyplane(["create", `${receiver.url}/cli`, "--events", "key.created, key.deleted", "--description", "from the CLI"]);
    expect(created.code).toBe(0);
    const [header, row] = created.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+URL\s+ACTIVE\s+EVENTS\s+DESCRIPTION\s+CREATED$/);
    expect(row).toContain("key.created,key.deleted");
    const secret = /secret \(shown once; verify signatures with it\): (whsec_\S+)/.exec(created.stdout)?.[1];
    expect(secret).toMatch(/^whsec_/);
    const id = Number(row!.split(/\s+/)[0]);

    const list = await keyplane(["list"]);
    expect(list.stdout).toContain(`${receiver.url}/cli`);
    expect(list.stdout).not.toContain(secret);
    expect(await json(["get", String(id)])).toMatchObject({ id, events: ["key.created", "key.deleted"], description: "from the CLI", active: true });
    expect(await json(["update", String(id), "--active", "false", "--events", "key.leaked"])).toMatchObject({ active: false, events: ["key.leaked"] });
    expect((await keyplane(["delete", String(id)])).stdout).toBe(`deleted webhook ${id}\n`);
    const gone = await keyplane(["get", String(id)]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr.trim()).toBe("keyplane: No such webhook. (404 not_found)");
  });

  it("shows a webhook's deliveries, newest first", async () => {
    const hook = await json(["create", `${receiver.url}/deliveries`, "--events", "key.created"]);
    await svc.as(acme.keys.customer).post("/keys", { name: "cli-delivered" });
    await receiver.waitFor(1);
    await svc.webhooks.drain();
    const run = await keyplane(["deliveries", String(hook.id)]);
    const [header, row, ...more] = run.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+TYPE\s+STATE\s+ATTEMPTS\s+LAST ATTEMPT\s+NEXT ATTEMPT\s+CREATED$/);
    expect(row).toMatch(/key\.created\s+delivered\s+1\s+\S+ 204\s+-/);
    expect(more).toEqual([]);
    expect(await json(["deliveries", String(hook.id), "--state", "pending"])).toEqual([]);
  });

  it("says what is wrong in one line, and exits non-zero", async () => {
    for (const [args, message] of [
      [["get"], /needs a webhook's numeric ID/],
      [["get", "abc"], /needs a webhook's numeric ID/],
      [["create"], /needs the webhook's URL/],
      [["create", "ftp://x.example/"], /url: url must be an http or https URL.*\(400 bad_request\)/],
      [["update", "1", "--active", "maybe"], /--active must be true or false/],
      [["launch"], /unknown command "webhooks launch"/],
    ] as const) {
      const run = await keyplane([...args]);
      expect(run.code, args.join(" ")).not.toBe(0);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim().split("\n")[0]).toMatch(message);
    }
    const noToken = await keyplane(["list"], { KEYPLANE_TOKEN: undefined });
    expect(noToken.stderr.trim()).toBe("keyplane: KEYPLANE_TOKEN is not set: export an API key to call the API with");
  });
});
