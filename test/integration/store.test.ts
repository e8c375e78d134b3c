import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSealer } from "../../src/domain/seal.ts";
import { newToken, tokenHash } from "../../src/domain/keys/token.ts";
import { UniqueViolation } from "../../src/domain/errors.ts";
import type { Database } from "../../src/store/database.ts";
import {
  applicationInsert, customerInsert, domainInsert, entityDelete, entityFind, entityList, subscriberInsert, TABLES, userInsert,
} from "../../src/store/directory/directory.ts";
import {
  keyDelete, keyFindByHash, keyFindById, keyFindByIdentity, keyInsertIds, keyInsertRows, keyInsertUnlessExists as insertKey, keyListByScope,
  keyLockById, keyUpdate, type KeyInsert,
} from "../../src/store/keys/keys.ts";
import { ADMIN } from "../../src/domain/keys/key-event.ts";
import { loadMigrations, migrate, migrationsApplied } from "../../src/store/migrate.ts";
import { KEYS_CHANNEL, KEYS_IMPORTED, parseKeyChange } from "../../src/store/keys/key-change.ts";
import { DIRECTORY_CHANNEL } from "../../src/store/directory/directory-changes.ts";
import type { Scope } from "../../src/domain/scope/scope.ts";
import { backends, openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { captureLogger } from "../support/service.ts";

// The store suite: the same tests on PGlite and on PostgreSQL.
const sealer = createSealer(randomBytes(32));
const now = new Date("2026-11-22T10:00:00.000Z");
const later = new Date("2026-11-22T11:00:00.000Z");

function keyAt(scope: Scope, name: string, extra: Partial<KeyInsert> = {}): KeyInsert & { token: string } {
  const token = newToken();
  const hash = tokenHash(token);
  return {
    token, hash, sealed: sealer.seal(token, hash), name, active: true,
    type: scope.applicationId ? "application" : scope.subscriberId ? "subscriber" : "customer",
    scope, userId: null, managedBy: null, expiresAt: null, ...extra,
  };
}

const keyInsertUnlessExists = async (db: Database, k: KeyInsert, at: Date) => (await insertKey(db, [{ ...k, author: ADMIN, changes: {}, now: at }]))[0];

describe.each(backends())("store on %s", (backend) => {
  let t: TestDatabase;
  let db: Database;
  const log = captureLogger([]);
  let tenant: Scope, domain: Scope, app: Scope, other: Scope;

  beforeAll(async () => {
    t = await openTestDatabase(backend, log);
    db = t.db;
    await migrate(db, log);
    const c = await customerInsert(db, "acme", now);
    const d = await domainInsert(db, c.id, "SIP.Acme.Example", now);
    const a = await applicationInsert(db, d, { name: "ivr", url: null, method: "POST" }, now);
    const c2 = await customerInsert(db, "globex", now);
    tenant = { tenantId: c.id, domainId: null, applicationId: null, subscriberId: null };
    domain = { ...tenant, domainId: d.id };
    app = { ...domain, applicationId: a.id };
    other = { tenantId: c2.id, domainId: null, applicationId: null, subscriberId: null };
  });
  afterAll(() => t.drop());

  describe("migrations", () => {
    it("are all applied, and applying again does nothing", async () => {
      const migrations = await loadMigrations();
      expect(await migrationsApplied(db, migrations)).toBe(true);
      expect(await migrate(db, log, migrations)).toEqual([]);
    });

    it("refuse to run when an applied migration was changed", async () => {
      const migrations = await loadMigrations();
      const changed = migrations.map((m, i) => (i === 0 ? { ...m, checksum: "0".repeat(64) } : m));
      await expect(migrate(db, log, changed)).rejects.toThrow(/was changed after it was applied/);
    });

    it("refuse a database newer than this code", async () => {
      await expect(migrate(db, log, [])).rejects.toThrow(/does not know/);
    });
  });

  describe("directory", () => {
    it("keeps domain names lower-case and finds names case-insensitively", async () => {
      const found = await entityFind(db, TABLES.domains, { kind: "name", name: "sip.ACME.example" }, null);
      expect(found?.domain).toBe("sip.acme.example");
      expect((await entityFind(db, TABLES.customers, { kind: "name", name: "ACME" }, null))?.id).toBe(tenant.tenantId);
    });

    it("refuses a second live entity of the same name, and allows it once the first is deleted", async () => {
      const c = await customerInsert(db, "initech", now);
      await expect(customerInsert(db, "INITECH", now)).rejects.toBeInstanceOf(UniqueViolation);
      expect(await entityDelete(db, TABLES.customers, c.id, ADMIN, later)).toBe(true);
      expect(await entityDelete(db, TABLES.customers, c.id, ADMIN, later)).toBe(false);
      expect((await customerInsert(db, "initech", now)).id).not.toBe(c.id);
    });

    it("refuses names the database rules out, whatever the caller checked", async () => {
      await expect(customerInsert(db, "self", now)).rejects.toThrow();
      await expect(customerInsert(db, "12345", now)).rejects.toThrow();
      await expect(customerInsert(db, "has space", now)).rejects.toThrow();
    });

    it("keeps an entity inside its parent's customer (composite foreign keys)", async () => {
      await expect(
        db.query("INSERT INTO applications (tenant_id, domain_id, name, created_at, modified_at) VALUES ($1, $2, 'x', now(), now())", [
          other.tenantId, domain.domainId,
        ]),
      ).rejects.toThrow();
    });

    it("finds names only within the parent they are unique in", async () => {
      expect(await entityFind(db, TABLES.applications, { kind: "name", name: "IVR" }, domain.domainId)).toMatchObject({ id: app.applicationId });
      expect(await entityFind(db, TABLES.applications, { kind: "name", name: "ivr" }, null)).toBeUndefined();
      expect(await entityFind(db, TABLES.applications, { kind: "id", id: app.applicationId! }, null)).toMatchObject({ name: "ivr" });
    });

    it("deletes everything below an entity, keys included", async () => {
      const c = await customerInsert(db, "umbrella", now);
      const d = await domainInsert(db, c.id, "umbrella.example", now);
      const s = await subscriberInsert(db, d, "+15550001", now);
      const u = await userInsert(db, c.id, d.id, "x@umbrella.example", now);
      const k = keyAt({ tenantId: c.id, domainId: d.id, applicationId: null, subscriberId: s.id }, "s");
      const id = (await keyInsertUnlessExists(db, k, now))!.id;
      expect(await entityDelete(db, TABLES.customers, c.id, ADMIN, later)).toBe(true);
      expect(await entityList(db, TABLES.domains, c.id)).toEqual([]);
      expect(await entityFind(db, TABLES.subscribers, { kind: "id", id: s.id }, null)).toBeUndefined();
      expect(await entityFind(db, TABLES.users, { kind: "id", id: u.id }, null)).toBeUndefined();
      expect(await keyFindById(db, id, now)).toBeUndefined();
      expect(await keyFindByHash(db, k.hash)).toBeUndefined();
    });

    it("announce every insert, change and deletion of a customer, domain, application or subscriber on the directory channel", async () => {
      const heard: [string, string][] = [];
      const stop = await db.listen({
        [DIRECTORY_CHANNEL]: (payload) => heard.push([DIRECTORY_CHANNEL, payload]),
        [KEYS_CHANNEL]: (payload) => heard.push([KEYS_CHANNEL, payload]),
      });
      const directory = () => heard.filter(([channel]) => channel === DIRECTORY_CHANNEL).map(([, payload]) => payload);
      try {
        const c = await customerInsert(db, "announced", now);
        await expect.poll(directory).toEqual(["customers"]);
        const d = await domainInsert(db, c.id, "announced.example", now);
        await applicationInsert(db, d, { name: "ivr", url: null, method: "POST" }, now);
        await subscriberInsert(db, d, "12125550142", now);
        await expect.poll(directory).toEqual(["customers", "domains", "applications", "subscribers"]);
        // The keys' announcements come on the same connection, each to its own channel's handler.
        const k = keyAt({ tenantId: c.id, domainId: d.id, applicationId: null, subscriberId: null }, "announced");
        const id = (await keyInsertUnlessExists(db, k, now))!.id;
        await keyUpdate(db, id, { name: "announced", active: false, activeAt: now, expiresAt: null }, ADMIN, { active: [true, false] }, later);
        await expect.poll(() => heard.filter(([channel]) => channel === KEYS_CHANNEL).map(([, p]) => parseKeyChange(p)?.id)).toEqual([id]);
        expect(directory()).toHaveLength(4);
        // Renamed behind the service's back: heard all the same.
        await db.query("UPDATE domains SET domain = 'renamed.example' WHERE id = $1", [d.id]);
        await expect.poll(directory).toHaveLength(5);
        // One statement that deletes a customer and everything below it: one announcement per table.
        heard.length = 0;
        await entityDelete(db, TABLES.customers, c.id, ADMIN, later);
        await expect.poll(() => directory().sort()).toEqual(["applications", "customers", "domains", "subscribers"]);
        // A user is on no platform path: not announced.
        heard.length = 0;
        await userInsert(db, other.tenantId, null, "announced@globex.example", now);
        await customerInsert(db, "announced-after", now);
        await expect.poll(directory).toEqual(["customers"]);
      } finally {
        await stop();
      }
    });
  });

  describe("keys", () => {
    it("stores no token in plain text", async () => {
      const k = keyAt(tenant, "plain-text-check");
      await keyInsertUnlessExists(db, k, now);
      const rows = await db.query("SELECT encode(token_hash, 'escape') AS h, encode(token_sealed, 'escape') AS s, k.*::text AS row FROM api_keys k WHERE name = 'plain-text-check'");
      expect(JSON.stringify(rows)).not.toContain(k.token);
    });

    it("insert once per live scope and name; the second insert finds the first", async () => {
      const first = keyAt(domain, "billing");
      const id = (await keyInsertUnlessExists(db, first, now))?.id;
      expect(id).toBeTypeOf("number");
      expect(await keyInsertUnlessExists(db, keyAt(domain, "billing"), now)).toBeUndefined();
      const found = await keyFindByIdentity(db, domain, "billing", now);
      expect(found?.id).toBe(id);
      expect(sealer.open(found!.sealed, found!.hash)).toBe(first.token);
      // The same name at another scope is another key.
      expect(await keyInsertUnlessExists(db, keyAt(tenant, "billing"), now)).toBeDefined();
      expect(await keyInsertUnlessExists(db, keyAt(app, "billing"), now)).toBeDefined();
    });

    it("embed the directory objects of their scope", async () => {
      const k = keyAt(app, "embedded");
      const id = (await keyInsertUnlessExists(db, k, now))!.id;
      const stored = (await keyFindByHash(db, k.hash))!;
      expect(stored).toMatchObject({
        id, type: "application", tenant: { name: "acme" }, domain: { domain: "sip.acme.example" }, application: { name: "ivr" },
        subscriber: null, user: null, activeAt: now, deletedAt: null,
      });
      expect(stored.hash.equals(k.hash)).toBe(true);
    });

    it("refuse a scope that does not exist or does not nest", async () => {
      const elsewhere = await domainInsert(db, other.tenantId, "elsewhere.example", now);
      for (const scope of [
        { ...tenant, tenantId: 999_999 },
        { ...tenant, domainId: elsewhere.id }, // another customer's domain
        { ...domain, applicationId: 999_999 },
        { ...domain, domainId: elsewhere.id, applicationId: app.applicationId }, // an application of another domain
        { ...domain, subscriberId: 999_999 },
      ]) {
        const type = scope.applicationId ? "application" : scope.subscriberId ? "subscriber" : "customer";
        await expect(keyInsertUnlessExists(db, keyAt(scope, "nowhere", { type }), now), JSON.stringify(scope)).rejects.toThrow(/no scope/);
      }
    });

    it("record no event of a key that does not exist", async () => {
      const key = await keyInsertUnlessExists(db, keyAt(tenant, "evented"), now);
      const event = (keyId: number) => db.query(
        `INSERT INTO key_events (at, action, key_id, key_name, key_type, tenant_id, actor, changes) VALUES ($1, 'updated', $2, 'k', 'customer', $3, '{"type":"admin"}', '{}')`,
        [now, keyId, tenant.tenantId]);
      await expect(event(999_999)).rejects.toThrow(/no key 999999/);
      await expect(event(key!.id)).resolves.toBeDefined();
    });

    it.runIf(backend === "postgres")("insert without locking their customer: a transaction holding its row does not hold them up", async () => {
      await db.transaction(async (tx) => {
        await tx.query("SELECT 1 FROM customers WHERE id = $1 FOR UPDATE", [tenant.tenantId]);
        // Another connection, while the row is locked: a foreign key's FOR KEY SHARE would wait here.
        expect(await keyInsertUnlessExists(db, keyAt(tenant, "unlocked"), now)).toBeDefined();
      });
    });

    it("are never removed, nor the directory rows they lie in: rows are deleted softly", async () => {
      for (const table of ["api_keys", "customers", "domains", "applications", "subscribers", "key_events"]) {
        await expect(db.query(`DELETE FROM ${table} WHERE false`), table).rejects.toThrow(/never removed|append-only/);
      }
    });

    it("refuse a type that does not match the scope", async () => {
      await expect(keyInsertUnlessExists(db, keyAt(app, "wrong-type", { type: "customer" }), now)).rejects.toThrow();
    });

    it("update a locked key's fields as the service worked them out", async () => {
      const k = keyAt(tenant, "to-update");
      const id = (await keyInsertUnlessExists(db, k, now))!.id;
      await db.transaction(async (tx) => {
        const locked = await keyLockById(tx, id, later);
        expect(locked?.id).toBe(id);
        await keyUpdate(tx, id, { name: "updated", active: false, activeAt: now, expiresAt: null }, ADMIN, { name: ["to-update", "updated"] }, later);
      });
      expect(await keyFindById(db, id, now)).toMatchObject({ active: false, name: "updated", modifiedAt: later, activeAt: now });
    });

    it("refuse a rename onto a live key's name in the same scope", async () => {
      await keyInsertUnlessExists(db, keyAt(tenant, "taken"), now);
      const id = (await keyInsertUnlessExists(db, keyAt(tenant, "free"), now))!.id;
      await expect(keyUpdate(db, id, { name: "taken", active: true, activeAt: now, expiresAt: null }, ADMIN, {}, later)).rejects.toBeInstanceOf(UniqueViolation);
    });

    it("delete softly: gone from look-ups, and the name is free again", async () => {
      const k = keyAt(tenant, "to-delete");
      const id = (await keyInsertUnlessExists(db, k, now))!.id;
      expect(await keyDelete(db, id, ADMIN, later)).toBe(true);
      expect(await keyDelete(db, id, ADMIN, later)).toBe(false);
      expect(await keyFindById(db, id, now)).toBeUndefined();
      expect(await keyFindByHash(db, k.hash)).toBeUndefined();
      const rows = await db.query<{ deleted_at: Date }>("SELECT deleted_at FROM api_keys WHERE id = $1", [id]);
      expect(rows[0]?.deleted_at).toEqual(later);
      expect(await keyInsertUnlessExists(db, keyAt(tenant, "to-delete"), now)).toBeDefined();
    });

    it("list the keys inside a scope in id order, page by page, with filters", async () => {
      const s = (await customerInsert(db, "lister", now)).id;
      const scope = { tenantId: s, domainId: null, applicationId: null, subscriberId: null };
      const ids: number[] = [];
      for (let i = 0; i < 7; i++) ids.push((await keyInsertUnlessExists(db, keyAt(scope, `k${i}`, { active: i % 2 === 0 }), now))!.id);
      const page1 = await keyListByScope(db, scope, {}, 0, 3, now);
      const page2 = await keyListByScope(db, scope, {}, page1[2]!.id, 3, now);
      const page3 = await keyListByScope(db, scope, {}, page2[2]!.id, 3, now);
      expect([...page1, ...page2, ...page3].map((k) => k.id)).toEqual(ids);
      expect((await keyListByScope(db, scope, { active: false }, 0, 100, now)).map((k) => k.name)).toEqual(["k1", "k3", "k5"]);
      expect((await keyListByScope(db, scope, { name: "k4" }, 0, 100, now)).map((k) => k.id)).toEqual([ids[4]]);
      expect(await keyListByScope(db, scope, { type: "application" }, 0, 100, now)).toEqual([]);
      // Another customer's list does not show them.
      expect((await keyListByScope(db, other, {}, 0, 100, now)).some((k) => ids.includes(k.id))).toBe(false);
    });

    it("list keys of every kind of scope with the same directory objects a single read embeds, read once per list", async () => {
      const c = await customerInsert(db, "embedder", now);
      const d = await domainInsert(db, c.id, "embed.example", now);
      const a = await applicationInsert(db, d, { name: "ivr", url: "https://ivr.example/hook", method: "GET" }, now);
      const sub = await subscriberInsert(db, d, "+15550002", now);
      const u = await userInsert(db, c.id, d.id, "e@embed.example", now);
      const scopes = [
        { tenantId: c.id, domainId: null, applicationId: null, subscriberId: null },
        { tenantId: c.id, domainId: d.id, applicationId: null, subscriberId: null },
        { tenantId: c.id, domainId: d.id, applicationId: a.id, subscriberId: null },
        { tenantId: c.id, domainId: d.id, applicationId: null, subscriberId: sub.id },
      ];
      for (const [i, scope] of scopes.entries()) await keyInsertUnlessExists(db, keyAt(scope, `e${i}`), now);
      await keyInsertUnlessExists(db, keyAt(scopes[1]!, u.email, { type: "user", userId: u.id }), now);
      const statements: string[] = [];
      const counted = { query: (text: string, params?: readonly unknown[]) => (statements.push(text), db.query(text, params)) } as Database;
      const entities = new Map();
      const first = await keyListByScope(counted, scopes[0]!, {}, 0, 3, now, entities);
      const rest = await keyListByScope(counted, scopes[0]!, {}, first[2]!.id, 100, now, entities);
      const listed = [...first, ...rest];
      expect(listed).toHaveLength(5);
      for (const key of listed) expect(key).toEqual(await keyFindById(db, key.id, now));
      expect(listed.every((key) => key.tenant === listed[0]!.tenant)).toBe(true);
      // The second page names a subscriber and a user the first did not: one more read, then none.
      expect(statements.filter((s) => s.includes("unnest"))).toHaveLength(2);
      await keyListByScope(counted, scopes[0]!, {}, 0, 100, now, entities);
      expect(statements.filter((s) => s.includes("unnest"))).toHaveLength(2);
    });

    it("announce a change to a key on the keys channel", async () => {
      const heard: string[] = [];
      const stop = await db.listen({ [KEYS_CHANNEL]: (payload) => heard.push(payload) });
      try {
        const k = keyAt(tenant, "announced");
        const id = (await keyInsertUnlessExists(db, k, now))!.id;
        await keyUpdate(db, id, { name: "announced", active: false, activeAt: now, expiresAt: null }, ADMIN, { active: [true, false] }, later);
        await expect.poll(() => heard.map(parseKeyChange).find((p) => p?.id === id)).toEqual({
          id, hash: k.hash.toString("hex"), managedBy: null,
        });
      } finally {
        await stop();
      }
    });
  });

  it("announces an import's keys once a statement, and only when the statement inserted one", async () => {
    const heard: string[] = [];
    const stop = await db.listen({ [KEYS_CHANNEL]: (payload) => heard.push(payload) });
    try {
      const keys = [keyAt(tenant, "imported-1"), keyAt(tenant, "imported-2")].map((k) => ({ ...k, author: ADMIN, changes: {}, now }));
      const ids = await keyInsertIds(db, keyInsertRows(keys), false);
      expect(ids.every((id) => typeof id === "number")).toBe(true);
      // The same keys again, each skipped: nothing new, so nothing to announce.
      expect(await keyInsertIds(db, keyInsertRows(keys), true)).toEqual([undefined, undefined]);
      // A change after both: once it is heard, whatever they announced has been (announcements arrive in commit order).
      const marker = (await keyInsertUnlessExists(db, keyAt(tenant, "after-the-import"), now))!.id;
      await keyUpdate(db, marker, { name: "after-the-import", active: false, activeAt: now, expiresAt: null }, ADMIN, { active: [true, false] }, later);
      await expect.poll(() => heard.some((p) => parseKeyChange(p)?.id === marker)).toBe(true);
      expect(heard.filter((p) => p === KEYS_IMPORTED)).toHaveLength(1);
    } finally {
      await stop();
    }
  });

  it("runs a transaction on one connection, and rolls it back on error", async () => {
    await expect(
      db.transaction(async (tx) => {
        await customerInsert(tx, "rolled-back", now);
        expect(await entityFind(tx, TABLES.customers, { kind: "name", name: "rolled-back" }, null)).toBeDefined();
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(await entityFind(db, TABLES.customers, { kind: "name", name: "rolled-back" }, null)).toBeUndefined();
  });
});
