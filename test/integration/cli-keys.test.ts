import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { expectCliFailure, useCli } from "../support/cli.ts";
import type { TestService } from "../support/service.ts";
import type { Tenant } from "../support/world.ts";

// `keyplane keys` as a user runs it: the real command in its own process, against a real server.


describe("keyplane keys", () => {
  const cli = useCli("keys");
  const { run: keyplane, json } = cli;
  let svc: TestService, acme: Tenant;
  beforeAll(() => ({ svc, acme } = cli.served()));

  it("lists the caller's keys as a table with a header row, never showing whole tokens", async () => {
    const run = await keyplane(["list"]);
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+NAME\s+TYPE\s+ACTIVE\s+SCOPE\s+KEY\s+EXPIRES\s+LAST USED\s+CREATED$/);
    const listed = (await svc.as(acme.keys.customer).get("/keys")).body as { keyId: string }[];
    expect(rows).toHaveLength(listed.length);
    for (const key of listed) expect(run.stdout).not.toContain(key.keyId);
    expect(run.stdout).toContain("acme/sip.acme.example");
  });

  it("prints JSON with -o json: what the API answers", async () => {
    const listed = (await svc.as(acme.keys.customer).get("/keys")).body;
    expect(await json(["list"])).toEqual(listed);
    expect(await json(["list", "--type", "application"])).toEqual(listed.filter((k: { type: string }) => k.type === "application"));
  });

  it("creates a key at a path's scope and shows its token that once; gets it by id and by keyId", async () => {
    const path = "/customers/acme/domains/sip.acme.example/keys";
    const run = await keyplane(["create", "billing", "--path", path]);
    expect(run.code).toBe(0);
    const created = (await svc.as(acme.keys.customer).get(`${path}?name=billing`)).body[0];
    expect(run.stdout).toContain(created.keyId);
    expect(await json(["get", String(created.id)])).toMatchObject({ id: created.id, name: "billing", domain: { domain: "sip.acme.example" } });
    expect(await json(["get", created.keyId])).toMatchObject({ id: created.id });
  });

  it("updates a key's name and active, then deletes it", async () => {
    const created = await json(["create", "temp", "--inactive"]);
    expect(created.active).toBe(false);
    const updated = await json(["update", String(created.id), "--name", "renamed", "--active", "true"]);
    expect(updated).toMatchObject({ id: created.id, name: "renamed", active: true });
    const deleted = await keyplane(["delete", String(created.id)]);
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted key ${created.id}\n` });
    expectCliFailure(await keyplane(["get", String(created.id)]), /^keyplane: .*\(404 not_found\)$/);
  });

  it("creates an expiring key, rotates it with a grace period, removes the new key's expiry, and reads the events", async () => {
    const created = await json(["create", "lifecycle", "--expires-in", "3600"]);
    expect(created.expiresAt).toBe(new Date(Date.parse(created.createdAt) + 3_600_000).toISOString());
    const rotated = await keyplane(["rotate", String(created.id), "--grace", "600", "--expires-in", "7200"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh = (await svc.as(acme.keys.customer).get("/keys?name=lifecycle")).body.find((k: { id: number }) => k.id !== created.id);
    expect(rotated.stdout).toContain(fresh.keyId); // the new token, shown that once
    expect(await json(["update", String(fresh.id), "--expires-at", "never"])).toMatchObject({ id: fresh.id, expiresAt: null });
    const table = await keyplane(["events", String(created.id)]);
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+AT\s+ACTION\s+KEY\s+ACTOR\s+CHANGES$/);
    expect(rows.map((r) => r.split(/\s{2,}/)[2])).toEqual(["created", "rotated"]);
    expect(rows[1]).toContain(`replacedBy: null -> ${fresh.id}`);
    const recent = await json(["events", "--action", "updated", "--limit", "1"]);
    expect(recent).toEqual([expect.objectContaining({ action: "updated", key: expect.objectContaining({ id: fresh.id }) })]);
    expectCliFailure(await keyplane(["rotate", String(created.id)]), /already rotated.*\(409 conflict\)$/);
  });

  it("fails with one line and a non-zero exit for a bad token, an unreachable server, a 4xx and bad arguments", async () => {
    expectCliFailure(await keyplane(["list"], { KEYPLANE_TOKEN: "XI" + "0".repeat(32) }), /\(401 unauthorized\)$/);
    expectCliFailure(await keyplane(["list"], { KEYPLANE_TOKEN: undefined }), /KEYPLANE_TOKEN is not set/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expectCliFailure(await keyplane(["list"], { KEYPLANE_URL: `http://127.0.0.1:${port}` }), /cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
    expectCliFailure(await keyplane(["create", "x".repeat(200)]), /\(400 bad_request\)$/);
    expectCliFailure(await keyplane(["update", "1", "--active", "yes"]), /--active must be true or false/);
    expectCliFailure(await keyplane(["list", "-o", "yaml"]), /-o must be table or json/);
  });

  it("never puts the caller's token in an error", async () => {
    const token = "XI" + "A".repeat(32);
    const run = await keyplane(["get", token], { KEYPLANE_TOKEN: token });
    expect(run.code).not.toBe(0);
    expect(run.stderr).not.toContain(token);
  });
});
