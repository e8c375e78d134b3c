import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadMigrations, migrate } from "../../src/store/migrate.ts";
import { backends, openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { captureLogger, startService, type TestService } from "../support/service.ts";

// Migrations are forward-only and run over a database that already holds keys: a database made by the
// release before the key lifecycle (test/fixtures/previous-release, made by that release's own code)
// is migrated by this one, and every key and token in it is as it was.
const FIXTURE = new URL("../fixtures/previous-release/", import.meta.url);
const PREVIOUS_RELEASE_MIGRATIONS = 2;

interface FixtureKey {
  id: number;
  token: string;
  name: string;
  type: string;
  active: boolean;
  tenantId: number;
  domainId: number | null;
  applicationId: number | null;
  subscriberId: number | null;
  userId: number | null;
}
interface Fixture {
  masterKey: string;
  live: FixtureKey[];
  deleted: { id: number; token: string; name: string };
}

describe.each(backends())("migrating the previous release's database on %s", (backend) => {
  let database: TestDatabase;
  let svc: TestService;
  let fixture: Fixture;
  let applied: number[];

  beforeAll(async () => {
    fixture = JSON.parse(await readFile(new URL("keys.json", FIXTURE), "utf8")) as Fixture;
    const log = captureLogger([]);
    database = await openTestDatabase(backend, log);
    const all = await loadMigrations();
    await migrate(database.db, log, all.slice(0, PREVIOUS_RELEASE_MIGRATIONS));
    await database.db.exec(await readFile(new URL("data.sql", FIXTURE), "utf8"));
    applied = await migrate(database.db, log, all);
    svc = await startService(backend, { database, masterKey: Buffer.from(fixture.masterKey, "hex") });
  });
  afterAll(() => svc?.stop());

  it("applies the new migrations once, forward only", async () => {
    expect(applied).toEqual((await loadMigrations()).slice(PREVIOUS_RELEASE_MIGRATIONS).map((m) => m.version));
    expect(await migrate(database.db, captureLogger([]), await loadMigrations())).toEqual([]);
  });

  it("keeps every key working with its own token, as it was, with no expiry, no recorded use and no successor", async () => {
    for (const key of fixture.live) {
      const self = await svc.as(key.token).get("/keys/self");
      const { token, ...shape } = key;
      if (!key.active) {
        expect(self.status, key.name).toBe(401);
        continue;
      }
      expect(self.status, key.name).toBe(200);
      expect(self.body).toMatchObject({ ...shape, keyId: token, expiresAt: null, lastUsedAt: null, replacedBy: null, deletedAt: null });
    }
  });

  it("lists the keys with their tokens unsealed, the deleted one aside", async () => {
    const root = fixture.live.find((k) => k.name === "root")!;
    const listed = (await svc.as(root.token).get("/keys")).body as { id: number; keyId: string }[];
    expect(listed.map((k) => [k.id, k.keyId]).sort()).toEqual(fixture.live.map((k) => [k.id, k.token]).sort());
    expect((await svc.as(fixture.deleted.token).get("/keys/self")).status).toBe(401);
    expect((await svc.as(root.token).get(`/keys/${fixture.deleted.id}`)).status).toBe(404);
  });

  it("keeps names unique as before: provisioning an existing name returns the key, a deleted one's name makes a new key", async () => {
    const root = fixture.live.find((k) => k.name === "root")!;
    const billing = fixture.live.find((k) => k.name === "billing")!;
    const again = await svc.as(root.token).post("/customers/acme/domains/sip.acme.example/keys", { name: "billing" });
    expect(again.body).toMatchObject({ id: billing.id, keyId: billing.token });
    const reborn = await svc.as(root.token).post("/customers/acme/keys", { name: fixture.deleted.name });
    expect(reborn.status).toBe(200);
    expect(reborn.body.id).toBeGreaterThan(Math.max(...fixture.live.map((k) => k.id), fixture.deleted.id));
  });

  it("starts each old key's history at the first change after the migration", async () => {
    const root = fixture.live.find((k) => k.name === "root")!;
    const worker = fixture.live.find((k) => k.name === "worker")!;
    expect((await svc.as(root.token).get(`/keys/${worker.id}/events`)).body).toEqual([]);
    const fresh = await svc.as(root.token).post(`/keys/${worker.id}/rotate`, { gracePeriodSeconds: 60 });
    expect(fresh.status).toBe(200);
    expect(((await svc.as(root.token).get(`/keys/${worker.id}/events`)).body as { action: string }[]).map((e) => e.action)).toEqual(["rotated"]);
    expect((await svc.as(worker.token).get("/keys/self")).status).toBe(200);
    expect((await svc.as(fresh.body.keyId).get("/keys/self")).status).toBe(200);
  });
});
