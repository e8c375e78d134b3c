import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectCliFailure, useCli } from "../support/cli.ts";
import type { TestService } from "../support/service.ts";
import type { Tenant } from "../support/world.ts";

// `keyplane keys policy` and `keyplane keys credits` as a user runs them: the real command in its own
// process, against a real server, the policy from a file or from standard input.


const plan = {
  restrictions: { ips: ["203.0.113.0/24"], methods: ["GET", "POST"] },
  ratelimits: [{ name: "calls", limit: 100, windowSeconds: 1, methods: ["POST"] }],
  credits: { remaining: 500, refill: { amount: 500, interval: "monthly", day: 1 } },
};

describe("keyplane keys policy and credits", () => {
  const cli = useCli("keys");
  const { run: keyplane, json } = cli;
  let svc: TestService, acme: Tenant, dir: string, keyId: number;

  beforeAll(async () => {
    ({ svc, acme } = cli.served());
    dir = await mkdtemp(join(tmpdir(), "keyplane-policy-"));
    keyId = ((await svc.as(acme.keys.customer).post("/domains/sip.acme.example/keys", { name: "billing" })).body as { id: number }).id;
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("sets a key's policy from a file, shows it as a table of rules, and removes it", async () => {
    const file = join(dir, "plan.json");
    await writeFile(file, JSON.stringify(plan));
    expect(await json(["policy", String(keyId), "--set", file])).toEqual(plan);
    const run = await keyplane(["policy", String(keyId)]);
    expect(run.code, run.stderr).toBe(0);
    const [header, ...rows] = run.stdout.trim().split("\n");
    expect(header).toMatch(/^PART\s+NAME\s+RULE$/);
    expect(rows.map((r) => r.split(/\s{2,}/))).toEqual([
      ["restriction", "ips", "203.0.113.0/24"],
      ["restriction", "methods", "GET, POST"],
      ["rate limit", "calls", "100 per 1s (POST)"],
      ["credits", "remaining", "500, set to 500 monthly on day 1"],
    ]);
    expect(await json(["policy", String(keyId), "--clear"])).toBeNull();
    expect((await keyplane(["policy", String(keyId)])).stdout).toBe("no policy of its own\n");
  });

  it("reads the policy from standard input with --set -", async () => {
    expect(await json(["policy", String(keyId), "--set", "-"], JSON.stringify({ credits: { remaining: 10 } }))).toEqual({ credits: { remaining: 10 } });
    expect(((await svc.as(acme.keys.customer).get(`/keys/${keyId}`)).body as { policy: unknown }).policy).toEqual({ credits: { remaining: 10 } });
  });

  it("shows, sets and adds to a key's credits", async () => {
    await json(["policy", String(keyId), "--set", "-"], JSON.stringify({ credits: { remaining: 10, refill: { amount: 10, interval: "daily" } } }));
    const run = await keyplane(["credits", String(keyId)]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^REMAINING\s+NEXT REFILL\n10\s+\d{4}-\d\d-\d\dT00:00:00\.000Z\n$/);
    expect(await json(["credits", String(keyId), "--set", "40"])).toMatchObject({ remaining: 40 });
    expect(await json(["credits", String(keyId), "--add", "5"])).toMatchObject({ remaining: 45 });
    expect(await json(["credits", String(keyId), "--add=-50"])).toMatchObject({ remaining: 0 });
  });

  it("fails with one line for a bad file, bad numbers, a key without credits, and a key changing its own", async () => {
    expectCliFailure(await keyplane(["policy", String(keyId), "--set", join(dir, "nowhere.json")]), /cannot read .*nowhere\.json: ENOENT/);
    const bad = join(dir, "bad.json");
    await writeFile(bad, "{ratelimits:");
    expectCliFailure(await keyplane(["policy", String(keyId), "--set", bad]), /bad\.json is not JSON/);
    await writeFile(bad, JSON.stringify({ restrictions: { ips: ["999.0.0.1"] } }));
    expectCliFailure(await keyplane(["policy", String(keyId), "--set", bad]), /restrictions\.ips\[0\].*\(400 bad_request\)$/);
    expectCliFailure(await keyplane(["credits", String(keyId), "--set=-3"]), /--set must be a whole number of 0 or more/);
    expectCliFailure(await keyplane(["credits", String(keyId), "--set", "1.5"]), /--set must be a whole number/);
    expectCliFailure(await keyplane(["credits", String(keyId), "--set", "1", "--add", "1"]), /not both/);
    await json(["policy", String(keyId), "--clear"]);
    expectCliFailure(await keyplane(["credits", String(keyId)]), /policy has no credits.*\(404 not_found\)$/);
    const self = (await svc.as(acme.keys.customer).get("/keys/self")).body as { id: number };
    expectCliFailure(await keyplane(["policy", String(self.id), "--clear"]), /own policy.*\(403 forbidden\)$/);
  });
});
