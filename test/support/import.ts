import { randomBytes } from "node:crypto";
import { request, type ClientRequest } from "node:http";
import supertest from "supertest";
import { expect } from "vitest";
import type { TestService } from "./service.ts";

// The import's and the export's files, as the suites write and read them (docs/migration.md).

/** A token of section 2's form, as another platform would have issued it. */
export const token = () => "XI" + randomBytes(16).toString("hex").toUpperCase();

/** An NDJSON body of these lines (objects, or text as it is). */
export const ndjson = (lines: (object | string)[]) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";

/** POST /admin/keys/import: its answer's lines, parsed. */
export async function importFile(svc: TestService, body: string, query = "?createDirectory=true") {
  const res = await supertest(svc.app).post(`/admin/keys/import${query}`).set("Authorization", `Bearer ${svc.adminToken}`)
    .set("Content-Type", "application/x-ndjson").send(body);
  expect(res.status, res.text).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/x-ndjson/);
  return res.text.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** GET /admin/keys/export: its lines, as text. */
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

/**
 * POST /admin/keys/import to a listening server, `first` written and the body left open: `onAnswer`
 * is called with the answer so far each time more of it comes, and may write or end the body, or
 * destroy the request. Resolves with the answer's text once it has ended or the request has gone.
 */
export function importWhileAnswered(url: string, adminToken: string, first: string, onAnswer: (answered: string, req: ClientRequest) => void): Promise<string> {
  return new Promise((resolve) => {
    let answered = "";
    const req = request(`${url}/admin/keys/import?createDirectory=true`, {
      method: "POST", headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/x-ndjson" },
    }, (res) => {
      res.on("data", (c: Buffer) => {
        answered += c.toString();
        onAnswer(answered, req);
      });
      res.on("error", () => resolve(answered));
      res.on("close", () => resolve(answered));
    });
    req.on("error", () => resolve(answered));
    req.write(first);
  });
}
