import { request } from "node:http";
import type { Worker } from "node:worker_threads";
import supertest from "supertest";
import { listen } from "../../src/http/server.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyLogRead } from "../../src/store/keys/key-catch-up.ts";
import { backends } from "../support/databases.ts";
import { exportFile, importFile, importWhileAnswered, ndjson, token } from "../support/import.ts";
import { startPeer, startService, type TestService } from "../support/service.ts";

// POST /admin/keys/import and GET /admin/keys/export (docs/api.md, "Import and export"): every status
// of a line, every refusal with its line number, a body cut off, a second run of the same file, and
// the round trip export -> import into an empty keyplane -> export. On PostgreSQL the imports run on
// the import's worker thread, as `keyplane serve` runs them; on PGlite, on the serving thread.
const FUTURE = "2099-01-01T00:00:00.000Z";

describe.each(backends())("import and export (%s)", (backend) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(backend, { importWorker: true, webhooks: { allowHttp: true, allowPrivate: true, sender: { pollMs: 3_600_000 } } });
  });
  afterAll(() => svc.stop());

  it("imports keys at every level, creating the directory, and the keys authenticate at once", async () => {
    const [c, d, a, s, u] = [token(), token(), token(), token(), token()];
    const out = await importFile(svc, ndjson([
      { customer: "acme", name: "root", keyId: c },
      { customer: "acme", domain: "sip.acme.example", name: "billing", keyId: d, expiresAt: FUTURE, policy: { credits: { remaining: 5 } } },
      { customer: "acme", domain: "sip.acme.example", application: "ivr", name: "ivr", keyId: a, type: "application" },
      { customer: "acme", domain: "sip.acme.example", subscriber: "12125550100", name: "phone", keyId: s, active: false },
      { customer: "acme", user: "ann@acme.example", name: "ann@acme.example", keyId: u },
    ]));
    expect(out.slice(0, 5).map((l) => [l.line, l.status])).toEqual([[1, "created"], [2, "created"], [3, "created"], [4, "created"], [5, "created"]]);
    expect(out[5]).toEqual({ summary: { created: 5, updated: 0, unchanged: 0, conflict: 0, invalid: 0 } });
    const self = await svc.as(d).get("/keys/self");
    expect(self.status).toBe(200);
    expect(self.body).toMatchObject({ id: out[1]!.id, name: "billing", type: "customer", expiresAt: FUTURE, policy: { credits: { remaining: 5 } } });
    expect((await svc.as(s).get("/keys/self")).status).toBe(401);
    expect((await svc.as(u).get("/keys/self")).body).toMatchObject({ type: "user", user: { email: "ann@acme.example" } });
    const events = await svc.admin.get(`/admin/events?action=created`);
    expect(events.body.filter((e: { key: { id: number } | null }) => e.key?.id === out[0]!.id)).toMatchObject([{ actor: { type: "import" } }]);
    // No log line holds an imported token (the import's lines and the SQL log included), nor does the export's trail.
    await exportFile(svc);
    for (const t of [c, d, a, s, u]) expect(svc.logs.join("\n")).not.toContain(t);
  });

  it("answers every status and every refusal with its line number, and a second run changes nothing", async () => {
    const [t1, t2, t3, t4] = [token(), token(), token(), token()];
    const first = await importFile(svc, ndjson([
      { customer: "globex", name: "one", keyId: t1 },
      { customer: "globex", name: "two", keyId: t2 },
      { customer: "globex", name: "gone", keyId: t3 },
    ]));
    expect(first.map((l) => l.status)).toEqual(["created", "created", "created", undefined]);
    expect((await svc.admin.delete(`/admin/customers/globex`)).status).toBe(204);
    const file = ndjson([
      { customer: "initech", name: "one", keyId: t1 }, // another key's token (deleted with globex)
      { customer: "initech", name: "a", keyId: t4 },
      { customer: "initech", name: "a", keyId: t4 }, // the line before's key again
      { customer: "initech", name: "a", keyId: token() }, // the name taken by an earlier line
      { customer: "initech", name: "b", keyId: t4 }, // the token of an earlier line, another name
      "not json",
      "",
      { customer: "initech", name: "c", keyId: t4.toLowerCase() },
      { customer: "initech", name: "c", keyId: token(), expiresAt: "2020-01-01T00:00:00Z" },
      { customer: "initech", name: "c", keyId: token(), createdAt: "yesterday" },
      { customer: "initech", application: "ivr", name: "c", keyId: token() },
      { customer: "initech", name: "c", keyId: token(), type: "application" },
      { customer: "initech", name: "x".repeat(20_000), keyId: token() },
      { customer: "no such", name: "c", keyId: token() },
      { customer: "initech", name: "c", keyId: token(), policy: { ratelimits: [{ name: "a", limit: 0, windowSeconds: 1 }] } },
    ]);
    const out = await importFile(svc, file);
    const statuses = out.slice(0, -1).map((l) => [l.line, l.status, (l.error as { error?: string } | undefined)?.error]);
    expect(statuses).toEqual([
      [1, "conflict", "conflict"],
      [2, "created", undefined],
      [3, "unchanged", undefined],
      [4, "conflict", "conflict"],
      [5, "conflict", "conflict"],
      [6, "invalid", "bad_request"],
      [7, "invalid", "bad_request"],
      [8, "invalid", "bad_request"],
      [9, "invalid", "bad_request"],
      [10, "invalid", "bad_request"],
      [11, "invalid", "bad_request"],
      [12, "invalid", "bad_request"],
      [13, "invalid", "payload_too_large"],
      [14, "invalid", "bad_request"],
      [15, "invalid", "bad_request"],
    ]);
    expect(out[2]!.id).toBe(out[1]!.id);
    expect(out.at(-1)).toEqual({ summary: { created: 1, updated: 0, unchanged: 1, conflict: 3, invalid: 10 } });

    const again = await importFile(svc, file);
    expect(again.at(-1)).toEqual({ summary: { created: 0, updated: 0, unchanged: 2, conflict: 3, invalid: 10 } });
    expect(again.slice(0, 3).map((l) => l.status)).toEqual(["conflict", "unchanged", "unchanged"]);

    const disabled = await importFile(svc, ndjson([{ customer: "initech", name: "a", keyId: t4, active: false, expiresAt: FUTURE }]));
    expect(disabled[0]).toEqual({ line: 1, status: "updated", id: out[1]!.id });
    expect((await svc.as(t4).get("/keys/self")).status).toBe(401);
    const events = (await svc.admin.get(`/admin/events`)).body.filter((e: { key: { id: number } | null }) => e.key?.id === out[1]!.id);
    expect(events.map((e: { action: string; actor: object; changes: object }) => [e.action, e.actor, Object.keys(e.changes)])).toEqual([
      ["updated", { type: "import" }, ["active", "expiresAt"]],
      ["created", { type: "import" }, ["name", "active"]],
    ]);
  });

  it("a line naming the token or the name of a line not yet written, just before it or hundreds before, is judged against what that line wrote", async () => {
    // Lines go in groups of 500 and batches of up to 1,000, a group read while the one before is written:
    // the repeats fall 300-600 lines after the lines they repeat, across those boundaries wherever they lie.
    const base: { customer: string; name: string; keyId: string }[] = [];
    const lines: [object, string][] = [];
    for (let n = 1; n <= 1_600; n++) {
      const earlier = base[base.length - 400 - (n % 200)];
      if (earlier && n % 10 === 3) lines.push([earlier, "unchanged"]);
      else if (earlier && n % 10 === 6) lines.push([{ ...earlier, keyId: token() }, "conflict"]);
      else if (earlier && n % 10 === 9) lines.push([{ ...earlier, name: `${earlier.name}-again` }, "conflict"]);
      else lines.push([base[base.push({ customer: "massive", name: `m-${n}`, keyId: token() }) - 1]!, "created"]);
    }
    const out = await importFile(svc, ndjson(lines.map(([line]) => line)));
    expect(out.slice(0, -1).map((l) => l.status)).toEqual(lines.map(([, status]) => status));
    // A line repeating the one just before it, and then lines that name nothing written before.
    const [a, ...others] = [token(), token(), token(), token(), token(), token(), token()];
    const near = [...others.slice(0, 5).map((keyId, i) => ({ customer: "massive", name: `n-${i}`, keyId })),
      { customer: "massive", name: "near", keyId: a }, { customer: "massive", name: "near", keyId: a }, { customer: "massive", name: "far", keyId: others[5] }];
    expect((await importFile(svc, ndjson(near))).slice(0, -1).map((l) => l.status)).toEqual([...Array<string>(6).fill("created"), "unchanged", "created"]);
  });

  it("refuses an unknown entity without createDirectory, and a body that is not NDJSON", async () => {
    const out = await importFile(svc, ndjson([{ customer: "nobody", name: "a", keyId: token() }]), "");
    expect(out[0]).toMatchObject({ line: 1, status: "invalid", error: { status: 404, error: "not_found" } });
    const json = await supertest(svc.app).post("/admin/keys/import").set("Authorization", `Bearer ${svc.adminToken}`).send({ customer: "acme" });
    expect(json.status).toBe(415);
    expect(json.body.error).toBe("unsupported_media_type");
  });

  it("a domain or a user's email that another customer holds is a conflict of that line, and the import goes on", async () => {
    const [t1, t2, t3, t4, t5, t6] = [token(), token(), token(), token(), token(), token()];
    const out = await importFile(svc, ndjson([
      { customer: "initech", domain: "sip.initech.example", name: "trunk", keyId: t1 },
      { customer: "hooli", domain: "sip.initech.example", name: "trunk", keyId: t2 },
      { customer: "initech", user: "bob@initech.example", name: "bob@initech.example", keyId: t3 },
      { customer: "hooli", user: "bob@initech.example", name: "bob@initech.example", keyId: t4 },
      { customer: "hooli", domain: "sip.initech.example", name: "trunk-2", keyId: t5 },
      { customer: "hooli", name: "root", keyId: t6 },
    ]));
    expect(out.slice(0, 6).map((l) => [l.line, l.status])).toEqual([[1, "created"], [2, "conflict"], [3, "created"], [4, "conflict"], [5, "conflict"], [6, "created"]]);
    for (const i of [1, 4]) expect(out[i]).toMatchObject({ error: { status: 409, error: "conflict", message: expect.stringContaining("sip.initech.example") } });
    expect(out[3]).toMatchObject({ error: { status: 409, error: "conflict", message: expect.stringContaining("bob@initech.example") } });
    expect(out[6]).toEqual({ summary: { created: 3, updated: 0, unchanged: 0, conflict: 3, invalid: 0 } });
    for (const refused of [t2, t4, t5]) expect((await svc.as(refused).get("/keys/self")).status).toBe(401);
    expect((await svc.as(t6).get("/keys/self")).body).toMatchObject({ name: "root", type: "customer" });
  });

  it("sends no webhook message for what it imports, where a provisioned key gets one", async () => {
    const hook = await svc.admin.post("/admin/webhooks", { url: "http://127.0.0.1:9/hook", events: ["key.created", "key.updated"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const deliveries = async () => Number((await svc.database.db.query("SELECT count(*)::int AS n FROM webhook_deliveries"))[0]!.n);
    const t = token();
    await importFile(svc, ndjson([{ customer: "wayne", name: "hooked", keyId: t }]));
    await importFile(svc, ndjson([{ customer: "wayne", name: "hooked", keyId: t, active: false }]));
    expect(await deliveries()).toBe(0);
    expect((await svc.admin.post("/admin/customers/wayne/keys", { name: "provisioned" })).status).toBe(200);
    expect(await deliveries()).toBe(1);
    expect((await svc.admin.delete(`/admin/webhooks/${hook.body.id}`)).status).toBe(204);
  });

  it("a body cut off mid-line: the lines before it stand, the cut line is invalid", async () => {
    const [a, b] = [token(), token()];
    const whole = ndjson([{ customer: "hooli", name: "a", keyId: a }, { customer: "hooli", name: "b", keyId: b }]);
    const out = await importFile(svc, whole.slice(0, whole.length - 10));
    expect(out.map((l) => l.status ?? "summary")).toEqual(["created", "invalid", "summary"]);
    expect((await svc.as(a).get("/keys/self")).status).toBe(200);
    expect((await svc.as(b).get("/keys/self")).status).toBe(401);
  });

  it("a key's token is 401 on /admin/keys/*, and domain without customer is 400", async () => {
    const t = token();
    await importFile(svc, ndjson([{ customer: "umbrella", name: "root", keyId: t }]));
    for (const req of [svc.as(t).get("/admin/keys/export"), svc.as(t).post("/admin/keys/import")]) expect((await req).status).toBe(401);
    const res = await svc.admin.get("/admin/keys/export?domain=sip.acme.example");
    expect(res.status).toBe(400);
    expect((await svc.admin.get("/admin/keys/export?customer=nobody")).status).toBe(404);
  });

  it("round trip: export, import into an empty keyplane, export again gives the same lines", async () => {
    const before = await exportFile(svc);
    expect(before.length).toBeGreaterThan(5);
    expect(before.every((l) => !("deletedAt" in JSON.parse(l)))).toBe(true);
    const empty = await startService(backend, { importWorker: true });
    try {
      const out = await importFile(empty, before.join("\n") + "\n");
      expect(out.at(-1)).toEqual({ summary: { created: before.length, updated: 0, unchanged: 0, conflict: 0, invalid: 0 } });
      expect((await exportFile(empty)).sort()).toEqual([...before].sort());
    } finally {
      await empty.stop();
    }
    const trail = (await svc.admin.get("/admin/events?action=exported")).body;
    expect(trail[0]).toMatchObject({ action: "exported", key: null, actor: { type: "admin" }, count: before.length, changes: {} });
    expect(JSON.stringify(trail)).not.toMatch(/XI[0-9A-F]{32}/);
    const acme = await exportFile(svc, "?customer=acme");
    expect(acme.length).toBe(5);
    expect(await exportFile(svc, "?customer=acme&domain=sip.acme.example")).toHaveLength(3);
  });

  it("an imported token that both processes refused authenticates on both within a second", async () => {
    const peer = await startPeer(svc);
    try {
      const t = token();
      for (const p of [svc, peer]) expect((await p.as(t).get("/keys/self")).status).toBe(401);
      await importFile(svc, ndjson([{ customer: "acme", name: "late", keyId: t }]));
      expect((await svc.as(t).get("/keys/self")).status).toBe(200);
      const deadline = performance.now() + 1_000;
      let status = 0;
      while (performance.now() < deadline && status !== 200) status = (await peer.as(t).get("/keys/self")).status;
      expect(status).toBe(200);
    } finally {
      await peer.close();
    }
  });

  it("the key event log tells of keys imported (a listener that missed the batch's announcement forgets the tokens it refused), of an export nothing", async () => {
    const start = await keyLogRead(svc.database.db, null, [], 10);
    await importFile(svc, ndjson([{ customer: "acme", name: "caught-up", keyId: token() }]));
    const read = await keyLogRead(svc.database.db, start.last, [], 10);
    expect(read).toMatchObject({ last: start.last + 1, changes: [], holes: [], imported: true });
    await exportFile(svc, "?customer=acme");
    expect(await keyLogRead(svc.database.db, read.last, [], 10)).toMatchObject({ last: read.last + 1, changes: [], holes: [], imported: false });
  });

  it("a client that reads the answers to the lines it sent before it sends more gets them", async () => {
    const http = await listen(svc.app, 0, "127.0.0.1");
    try {
      const lines = Array.from({ length: 600 }, (_, i) => JSON.stringify({ customer: "wayne", name: `turn-${i}`, keyId: token() }) + "\n");
      // Every line of the first half answered: the second half goes.
      const text = await importWhileAnswered(http.url, svc.adminToken, lines.slice(0, 300).join(""), (answered, req) => {
        if (answered.includes('"line":300,') && !req.writableEnded) req.end(lines.slice(300).join(""));
      });
      expect(text).toContain('{"summary":{"created":600,');
    } finally {
      await http.close(100);
    }
  });

  it("a client that goes away mid-file: every line it sent whole is written, the line it cut is not", async () => {
    const http = await listen(svc.app, 0, "127.0.0.1");
    try {
      const lines = Array.from({ length: 400 }, (_, i) => JSON.stringify({ customer: "cyberdyne", name: `gone-${i}`, keyId: token() }) + "\n");
      const sent = lines.slice(0, 300).join("") + lines[300]!.slice(0, 20);
      // Answers have begun: the client goes, without ending its body.
      await importWhileAnswered(http.url, svc.adminToken, sent, (answered, req) => {
        if (answered.includes('"line":1,')) req.destroy();
      });
      let exported: string[] = [];
      for (const started = Date.now(); exported.length < 300 && Date.now() - started < 10_000; await new Promise((r) => setTimeout(r, 100))) {
        exported = await exportFile(svc, "?customer=cyberdyne");
      }
      expect(exported.map((l) => (JSON.parse(l) as { name: string }).name).sort()).toEqual(lines.slice(0, 300).map((_, i) => `gone-${i}`).sort());
    } finally {
      await http.close(100);
    }
  });

  // Only PostgreSQL imports on the worker thread (src/import-worker.ts).
  it.runIf(backend === "postgres")("a worker that stops mid-import: the lines answered stand, the answer ends with the error line, and the file run again completes", async () => {
    const http = await listen(svc.app, 0, "127.0.0.1");
    try {
      const lines = Array.from({ length: 3_000 }, (_, i) => JSON.stringify({ customer: "tyrell", name: `stop-${i}`, keyId: token() }) + "\n");
      // The import's worker starts with this import: it is stopped once the first answers have come.
      const started = new Promise<Worker>((resolve) => process.once("worker", resolve));
      let stopped: Promise<number> | undefined;
      const text = await importWhileAnswered(http.url, svc.adminToken, lines.join(""), (answered, req) => {
        if (!req.writableEnded) req.end();
        if (answered.includes('"line":1,')) stopped ??= started.then((worker) => worker.terminate());
      });
      expect(await stopped).toBe(1);
      const answers = text.trimEnd().split("\n").map((l) => JSON.parse(l) as { line?: number; status?: string; error?: { status: number } });
      const last = answers.pop()!;
      expect(last.error?.status).toBe(500);
      // Lines 1 to k, each once, in order, each created: what the worker had answered when it stopped.
      expect(answers.length).toBeGreaterThan(0);
      expect(answers.length).toBeLessThan(lines.length);
      expect(answers).toEqual(answers.map((_, i) => expect.objectContaining({ line: i + 1, status: "created" })));
      const exported = await exportFile(svc, "?customer=tyrell");
      expect(exported.length).toBeGreaterThanOrEqual(answers.length);
      // A new worker takes the same file: what the stopped one wrote is unchanged, the rest created.
      const again = await importFile(svc, lines.join(""));
      const summary = again.at(-1)!.summary as Record<string, number>;
      expect(summary).toEqual({ created: lines.length - exported.length, updated: 0, unchanged: exported.length, conflict: 0, invalid: 0 });
      expect(await exportFile(svc, "?customer=tyrell")).toHaveLength(lines.length);
    } finally {
      await http.close(100);
    }
  });

  it("an import's body may take longer than the whole-request time limit of every other route", async () => {
    const http = await listen(svc.app, 0, "127.0.0.1", { headersTimeoutMs: 500, requestTimeoutMs: 1_000, checkIntervalMs: 50 });
    try {
      const lines = [token(), token(), token()].map((t, i) => JSON.stringify({ customer: "acme", name: `slow-${i}`, keyId: t }) + "\n");
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request(`${http.url}/admin/keys/import?createDirectory=true`, {
          method: "POST", headers: { Authorization: `Bearer ${svc.adminToken}`, "Content-Type": "application/x-ndjson" },
        }, (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve(`${res.statusCode} ${text}`));
        });
        req.on("error", reject);
        req.flushHeaders();
        // A line every 800 ms: 2.4 s in all, over the 1 s limit.
        lines.forEach((line, i) => setTimeout(() => (i === lines.length - 1 ? req.end(line) : req.write(line)), 800 * (i + 1)));
      });
      expect(answer).toMatch(/^200 /);
      expect(answer).toContain('{"summary":{"created":3,');
    } finally {
      await http.close(100);
    }
  });
});
