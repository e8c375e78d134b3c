import { randomBytes } from "node:crypto";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";

// POST /admin/keys/import and GET /admin/keys/export (docs/api.md, "Import and export"): every status
// of a line, every refusal with its line number, a body cut off, a second run of the same file, and
// the round trip export -> import into an empty keyplane -> export.
export const token = () => "XI" + randomBytes(16).toString("hex").toUpperCase();
const FUTURE = "2099-01-01T00:00:00.000Z";

/** An NDJSON body of these lines (objects, or text as it is). */
export const ndjson = (lines: (object | string)[]) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";

export async function importFile(svc: TestService, body: string, query = "?createDirectory=true") {
  const res = await supertest(svc.app).post(`/admin/keys/import${query}`).set("Authorization", `Bearer ${svc.adminToken}`)
    .set("Content-Type", "application/x-ndjson").send(body);
  expect(res.status, res.text).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/x-ndjson/);
  return res.text.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function exportFile(svc: TestService, query = "") {
  const res = await supertest(svc.app).get(`/admin/keys/export${query}`).set("Authorization", `Bearer ${svc.adminToken}`).buffer(true)
    .parse((r, done) => {
      let text = "";
      r.on("data", (c: Buffer) => (text += c.toString()));
      r.on("end", () => done(null, text));
    });
  expect(res.status, String(res.body)).toBe(200);
  const text = res.body as string;
  return text === "" ? [] : text.trimEnd().split("\n");
}

describe.each(backends())("import and export (%s)", (backend) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(backend);
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
    expect(events.body.filter((e: { key: { id: number } }) => e.key.id === out[0]!.id)).toMatchObject([{ actor: { type: "import" } }]);
  });
});
