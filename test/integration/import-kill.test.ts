import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { backends, createPostgresDatabase } from "../support/databases.ts";
import { ndjson, token } from "../support/import.ts";
import { startServerProcess, type ServerProcess } from "../support/process.ts";

// A keyplane killed (SIGKILL) in the middle of an import: every line is wholly there or not at all (a
// key with its event and its balance), and running the same file again completes it
// (docs/migration.md, "If an import stops").
const KEYS = 3_000;

/** POSTs `body` to the import, slowly enough to be cut; calls `onLine` with each answer line until the connection ends. */
function sendImport(url: string, adminToken: string, body: string, onLine: (line: Record<string, unknown>) => void): Promise<void> {
  return new Promise((resolve) => {
    const req = request(`${url}/admin/keys/import?createDirectory=true`, {
      method: "POST", headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/x-ndjson" },
    }, (res) => {
      let rest = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        for (const part of parts) onLine(JSON.parse(part) as Record<string, unknown>);
      });
      res.on("end", resolve);
      res.on("error", () => resolve());
      res.on("aborted", () => resolve());
    });
    req.on("error", () => resolve());
    // Lines in chunks of 50, so that batches commit one after another while the rest is still on its way.
    const chunks = body.match(/(?:[^\n]*\n){1,50}/g)!;
    Readable.from(chunks).pipe(req);
  });
}

async function admin(url: string, adminToken: string, path: string): Promise<string> {
  const res = await fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${adminToken}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** How many `created` events the admin's trail holds, page by page. */
async function createdEvents(url: string, adminToken: string): Promise<number> {
  let count = 0;
  for (let before = ""; ;) {
    const page = JSON.parse(await admin(url, adminToken, `/admin/events?action=created&limit=1000${before}`)) as { id: number }[];
    count += page.length;
    if (page.length < 1000) return count;
    before = `&before=${page.at(-1)!.id}`;
  }
}

describe.each(backends())("an import killed mid-way (%s)", (backend) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("leaves every line wholly there or not at all, and a second run completes it", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "keyplane-import-kill-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const database = backend === "postgres" ? await createPostgresDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    const adminToken = "kpa_kill_" + randomBytes(24).toString("hex");
    const env = {
      KEYPLANE_MASTER_KEY: randomBytes(32).toString("hex"), KEYPLANE_ADMIN_TOKEN: adminToken, KEYPLANE_DATA_DIR: dataDir,
      ...(database && { DATABASE_URL: database.url }),
    };
    const start = async () => {
      const p = await startServerProcess(env, 60_000);
      cleanups.push(async () => (p.child.signalCode === null ? p.stop() : undefined));
      return p;
    };

    const lines = Array.from({ length: KEYS }, (_, i) => ({
      customer: "acme", domain: `d${i % 7}.acme.example`, name: `key-${i}`, keyId: token(), policy: { credits: { remaining: i + 1 } },
    }));
    const file = ndjson(lines);
    const first: ServerProcess = await start();
    let answered = 0;
    const sent = sendImport(first.url, adminToken, file, () => {
      if (++answered === 200) first.child.kill("SIGKILL");
    });
    await sent;
    expect(answered).toBeGreaterThanOrEqual(200);
    expect(answered).toBeLessThan(KEYS);

    const second = await start();
    const exported = (await admin(second.url, adminToken, "/admin/keys/export")).trimEnd().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { keyId: string; name: string; policy: unknown });
    expect(exported.length).toBeGreaterThanOrEqual(200);
    expect(exported.length).toBeLessThan(KEYS);
    const byToken = new Map(lines.map((l) => [l.keyId, l]));
    for (const key of exported) expect({ name: key.name, policy: key.policy }).toEqual({ name: byToken.get(key.keyId)!.name, policy: byToken.get(key.keyId)!.policy });
    // Each key's own rows came with it: its created event, and its balance (shown with the key).
    expect(await createdEvents(second.url, adminToken)).toBe(exported.length);
    for (const key of exported.slice(-20)) {
      const shown = await fetch(`${second.url}/keys/self`, { headers: { Authorization: `Bearer ${key.keyId}` } });
      expect(((await shown.json()) as { policy: unknown }).policy).toEqual(byToken.get(key.keyId)!.policy);
    }

    const summaries: Record<string, unknown>[] = [];
    await sendImport(second.url, adminToken, file, (line) => {
      if (line.summary) summaries.push(line.summary as Record<string, unknown>);
    });
    expect(summaries).toEqual([{ created: KEYS - exported.length, updated: 0, unchanged: exported.length, conflict: 0, invalid: 0 }]);
  }, 120_000);
});
