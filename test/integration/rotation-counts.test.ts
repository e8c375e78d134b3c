// Rotating never resets a limit (docs/api.md, "Restricted keys"): the new key takes over the old one's
// windows and balance, and during a grace period both tokens count against the same ones. Written as
// a key limited to one request an hour would try to get a second.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok as expectOk, type Answering } from "../support/answers.ts";
import { fakeClock } from "../support/clock.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

type Key = { id: number; keyId: string };
type Verdict = { code: string; ratelimits?: { name: string; scope: string; id?: number; remaining: number }[]; credits?: { remaining: number } };

const hourly = { ratelimits: [{ name: "hourly", limit: 1, windowSeconds: 3600 }] };

describe.each(backends())("rotation continues counts on %s", (backend) => {
  const time = fakeClock("2026-11-23T10:10:00.000Z");
  let svc: TestService;
  let acme: Tenant;
  let root: ReturnType<TestService["as"]>;

  const ok: <T = Key>(request: Answering, status?: number) => Promise<T> = expectOk;
  const verify = (key: string) => ok<Verdict>(supertest(svc.app).post("/verify").send({ key }));
  const auth = (key: string) => supertest(svc.app).get("/auth").set("Authorization", `Bearer ${key}`).set("X-Original-Method", "GET").set("X-Original-URI", "/customers/acme/calls");
  const made = (name: string, policy: object) => ok(root.post("/keys", { name, policy }));

  beforeAll(async () => {
    svc = await startService(backend, { clock: time.clock, expirySweepMs: 3_600_000, lastUseFlushMs: 3_600_000 });
    acme = await createTenant(svc, "acme");
    root = svc.as(acme.keys.customer);
  });
  afterAll(() => svc?.stop());

  it("refuses the new token when the old one spent the hour's one request (no grace)", async () => {
    const key = await made("once-an-hour", hourly);
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID", ratelimits: [{ scope: "key", id: key.id, remaining: 0 }] });
    const rotated = await ok(root.post(`/keys/${key.id}/rotate`, {}));
    const v = await verify(rotated.keyId);
    expect(v).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ scope: "key", id: rotated.id, remaining: 0 }] });
    expect((await auth(rotated.keyId)).status).toBe(429);
  });

  it("refuses the new token of a key that rotated itself", async () => {
    const key = await made("self-rotating", hourly);
    expect((await auth(key.keyId)).status).toBe(200);
    const rotated = await ok(svc.as(key.keyId).post("/keys/self/rotate", {}));
    expect(await verify(rotated.keyId)).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("counts both tokens against one window during a grace period", async () => {
    const key = await made("graceful", { ratelimits: [{ name: "hourly", limit: 3, windowSeconds: 3600 }] });
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID" });
    const rotated = await ok(root.post(`/keys/${key.id}/rotate`, { gracePeriodSeconds: 600 }));
    expect(await verify(rotated.keyId)).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 1 }] });
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 0 }] });
    expect(await verify(rotated.keyId)).toMatchObject({ code: "RATE_LIMITED" });
    expect(await verify(key.keyId)).toMatchObject({ code: "RATE_LIMITED" });
    // The next hour brings a new window (the old token's grace is over by then).
    time.advance(3600_000);
    expect(await verify(rotated.keyId)).toMatchObject({ code: "VALID", ratelimits: [{ remaining: 2 }] });
  });

  it("carries the balance to the new token, and during grace both spend the one balance", async () => {
    const key = await made("metered", { credits: { remaining: 3 } });
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 2 } });
    const rotated = await ok(root.post(`/keys/${key.id}/rotate`, { gracePeriodSeconds: 600 }));
    expect((await ok<{ remaining: number }>(root.get(`/keys/${rotated.id}/credits`))).remaining).toBe(2);
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 1 } });
    expect(await verify(rotated.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
    expect(await verify(key.keyId)).toMatchObject({ code: "USAGE_EXCEEDED" });
    expect(await verify(rotated.keyId)).toMatchObject({ code: "USAGE_EXCEEDED" });
    // Rotated again, with no grace: still empty.
    const third = await ok(root.post(`/keys/${rotated.id}/rotate`, {}));
    expect(await verify(third.keyId)).toMatchObject({ code: "USAGE_EXCEEDED" });
    expect((await ok<{ remaining: number }>(root.get(`/keys/${third.id}/credits`))).remaining).toBe(0);
  });

  it("keeps a balance set on the new key for both tokens", async () => {
    const key = await made("topped-up", { credits: { remaining: 1 } });
    const rotated = await ok(root.post(`/keys/${key.id}/rotate`, { gracePeriodSeconds: 600 }));
    await ok(root.put(`/keys/${rotated.id}/credits`, { remaining: 2 }));
    expect(await verify(key.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 1 } });
    expect(await verify(rotated.keyId)).toMatchObject({ code: "VALID", credits: { remaining: 0 } });
  });
});
