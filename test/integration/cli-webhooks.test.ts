import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliJson, useCli } from "../support/cli.ts";
import type { TestService } from "../support/service.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import type { Tenant } from "../support/world.ts";

// `keyplane webhooks` as a user runs it: the real command in its own process, against a real server.


describe("keyplane webhooks", () => {
  const cli = useCli("webhooks", { webhooks: { allowHttp: true, allowPrivate: true } });
  const { run: keyplane, json } = cli;
  let svc: TestService, acme: Tenant, receiver: Receiver;
  beforeAll(async () => {
    ({ svc, acme } = cli.served());
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

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

  it("lists every webhook the key may see, page after page", async () => {
    // 101 webhooks inside the customer key's scope, 25 a scope at most: more than one page of 100.
    for (const hook of (await svc.admin.get("/admin/webhooks")).body as { id: number }[]) await svc.admin.delete(`/admin/webhooks/${hook.id}`);
    const made: number[] = [];
    const makers: [string, number][] = [[acme.keys.customer, 25], [acme.keys.domain, 25], [acme.keys.otherDomain, 25], [acme.keys.application, 25], [acme.keys.subscriber, 1]];
    for (const [token, n] of makers) {
      for (let i = 0; i < n; i++) {
        const res = await svc.as(token).post("/webhooks", { url: `${receiver.url}/paged-${made.length}` });
        expect(res.status).toBe(201);
        made.push((res.body as { id: number }).id);
      }
    }
    const listed = (await json(["list"])) as { id: number }[];
    expect(listed.map((h) => h.id)).toEqual(made);
    expect((await keyplane(["list"])).stdout.trim().split("\n")).toHaveLength(listed.length + 1);
    for (const id of made) await svc.admin.delete(`/admin/webhooks/${id}`);
  });

  it("follows the server's Link rel=next to the last page, and never to another server", async () => {
    const asked: string[] = [];
    let link: (after: number) => string | undefined = (after) => (after < 3 ? `</webhooks?limit=100&after=${after}>; rel="next"` : undefined);
    const pager = createServer((req, res) => {
      asked.push(`${req.url} ${req.headers.authorization === `Bearer ${acme.keys.customer}`}`);
      const after = Number(new URL(req.url!, "http://x").searchParams.get("after") ?? 0);
      const next = link(after + 1);
      res.writeHead(200, { "content-type": "application/json", ...(next && { link: next }) });
      res.end(JSON.stringify([{ id: after + 1, url: `https://hooks.example/${after + 1}`, events: ["key.created"], description: null, active: true, createdAt: "2026-11-28T00:00:00Z" }]));
    });
    await new Promise<void>((resolve) => pager.listen(0, "127.0.0.1", resolve));
    const pagerUrl = `http://127.0.0.1:${(pager.address() as AddressInfo).port}`;
    try {
      const listed = cliJson(await keyplane(["list", "-o", "json"], { KEYPLANE_URL: pagerUrl })) as { id: number }[];
      expect(listed.map((h) => h.id)).toEqual([1, 2, 3]);
      expect(asked).toEqual(["/webhooks?limit=100 true", "/webhooks?limit=100&after=1 true", "/webhooks?limit=100&after=2 true"]);

      // A next page on another host would take the token there: refused, in one line.
      link = () => "<//evil.example/webhooks?after=1>; rel=\"next\"";
      asked.length = 0;
      const run = await keyplane(["list"], { KEYPLANE_URL: pagerUrl });
      expect(run.code).not.toBe(0);
      expect(run.stderr.trim()).toMatch(/^keyplane: the server's next page is not on http:\/\/127\.0\.0\.1:\d+: \/\/evil\.example/);
      expect(asked).toHaveLength(1);
    } finally {
      await new Promise((resolve) => pager.close(resolve));
    }
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
