import pino from "pino";
import { describe, expect, it } from "vitest";
import { StoreUnavailable } from "../../domain/errors.ts";
import type { StoredKey } from "../../domain/model.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import type { Queryable, Row } from "../../store/database.ts";
import { PolicyChains, UNBOUND, type PolicyChain } from "./policy-chain.ts";

// Which policies bind a key, and when they are read again (docs/adr/0013, "Changes within a second"):
// a key's own comes with the key; its entities' are read afresh after each directory announcement, from
// the key itself while announcements may be missed, and from the key as last read when the database
// cannot be reached.

const limit = (n: number): Policy => ({ ratelimits: [{ name: "calls", limit: n, windowSeconds: 60 }] });

/** The entities' policies as the database holds them, and how often they were read. */
function database(customer: Policy | null) {
  const db = { customer, reads: 0, down: false, logs: [] as string[] };
  const q: Queryable = {
    async query<R extends Row>() {
      db.reads++;
      if (db.down) throw new StoreUnavailable("test");
      return [{ customer: db.customer, domain: null, application: null, subscriber: null }] as unknown as R[];
    },
    exec: async () => undefined,
  };
  return { db, chains: new PolicyChains(q, pino({ level: "info" }, { write: (line: string) => void db.logs.push(line) })) };
}

/** A customer key as the verification cache holds it, with its customer's policy as it was read. */
function key(own: Policy | null, customer: Policy | null): StoredKey {
  return { id: 17, lineage: 17, ancestors: [], tenantId: 3, domainId: null, applicationId: null, subscriberId: null, policy: own, tenant: { policy: customer }, domain: null, application: null, subscriber: null } as unknown as StoredKey;
}

const limits = (chain: PolicyChain) => chain.map((link) => [link.holder, link.policy.ratelimits?.[0]?.limit]);

describe("PolicyChains", () => {
  it("binds a key by its customer's policy and its own, outermost first, resolved once per key object", async () => {
    const { db, chains } = database(limit(100));
    const k = key(limit(5), limit(100));
    expect(limits(await chains.chainOf(k))).toEqual([["customer:3", 100], ["key:17", 5]]);
    const again = chains.chainOf(k);
    expect(again).not.toBeInstanceOf(Promise);
    expect(db.reads).toBe(1);
    // Another key of the same customer needs no read: the customer's policy is kept by holder.
    expect(limits(chains.chainOf({ ...k, id: 18, policy: null }) as PolicyChain)).toEqual([["customer:3", 100]]);
  });

  it("reads an entity's policy again after a directory announcement, though the cached key carries the old one", async () => {
    const { db, chains } = database(limit(100));
    const k = key(null, limit(100));
    await chains.chainOf(k);
    db.customer = limit(1);
    expect(limits(chains.chainOf(k) as PolicyChain)).toEqual([["customer:3", 100]]);
    chains.clear();
    expect(limits(await chains.chainOf(k))).toEqual([["customer:3", 1]]);
    db.customer = null;
    chains.clear();
    expect(await chains.chainOf(k)).toBe(UNBOUND);
  });

  it("while announcements may be missed, takes the entities' policies from the key, which is then read afresh each time", async () => {
    const { db, chains } = database(limit(1));
    chains.listening("lost");
    expect(limits(chains.chainOf(key(null, limit(7))) as PolicyChain)).toEqual([["customer:3", 7]]);
    expect(db.reads).toBe(0);
    chains.listening("restored");
    expect(limits(await chains.chainOf(key(null, limit(7))))).toEqual([["customer:3", 1]]);
  });

  it("when the database cannot be reached, binds the key by its entities as last read", async () => {
    const { db, chains } = database(limit(1));
    db.down = true;
    expect(limits(await chains.chainOf(key(null, limit(7))))).toEqual([["customer:3", 7]]);
  });

  it("ignores a stored policy the API would have refused, and says so", async () => {
    const { db, chains } = database({ ratelimits: [{ name: "bad name", limit: 0, windowSeconds: 0 }] });
    expect(await chains.chainOf(key(null, null))).toBe(UNBOUND);
    expect(db.logs.join("")).toMatch(/"holder":"customer:3".*"reason":"ratelimits\[0\]\.name: .*a stored policy is not valid/);
  });

  it("answers the chain last resolved for the key when the database cannot be reached, newer than what the key carries", async () => {
    const { db, chains } = database(limit(100));
    const k = key(null, limit(500)); // the key was read before its customer's policy changed to 100
    expect(limits(await chains.chainOf(k))).toEqual([["customer:3", 100]]);
    chains.clear(); // an announcement, then the outage
    db.down = true;
    expect(limits(await chains.chainOf(k))).toEqual([["customer:3", 100]]);
    // A key object never resolved: what it carries.
    expect(limits(await chains.chainOf({ ...k, id: 18 }))).toEqual([["customer:3", 500]]);
  });
});

describe("PolicyChains, for a key other keys made (docs/api.md, \"Restricted keys\")", () => {
  /** Keys 1 (lineage 1) and 5 (rotated into 9) made the key; what their newest keys hold, and reads. */
  function lineageDatabase() {
    const db = { ancestors: new Map<number, { id: number; policy: Policy | null }>([[1, { id: 1, policy: limit(50) }], [5, { id: 9, policy: null }]]), reads: 0, down: false };
    const q: Queryable = {
      async query<R extends Row>(sql: string) {
        db.reads++;
        if (db.down) throw new StoreUnavailable("test");
        if (sql.includes("DISTINCT ON")) return [...db.ancestors].map(([lineage, a]) => ({ lineage, ...a })) as unknown as R[];
        return [{ customer: null, domain: null, application: null, subscriber: null }] as unknown as R[];
      },
      exec: async () => undefined,
    };
    return { db, chains: new PolicyChains(q, pino({ level: "silent" })) };
  }
  const made = (own: Policy | null) => ({ ...key(own, null), id: 12, lineage: 12, ancestors: [1, 5] }) as StoredKey;

  it("binds it by each ancestor's own policy, between the entities' and its own, held by the ancestor's lineage", async () => {
    const { db, chains } = lineageDatabase();
    db.ancestors.set(5, { id: 9, policy: limit(20) });
    const chain = await chains.chainOf(made(limit(3)));
    expect(chain.map((l) => [l.holder, l.id, l.policy.ratelimits?.[0]?.limit])).toEqual([["key:1", 1, 50], ["key:5", 9, 20], ["key:12", 12, 3]]);
    expect(await chains.restrictedOf(made(null))).toBe(true);
  });

  it("keeps ancestors until an announcement, and reads them again after one", async () => {
    const { db, chains } = lineageDatabase();
    await chains.chainOf(made(null));
    const reads = db.reads;
    expect(limits(chains.chainOf(made(null)) as PolicyChain)).toEqual([["key:1", 50]]);
    expect(db.reads).toBe(reads);
    db.ancestors.set(1, { id: 1, policy: null });
    chains.clear();
    expect(await chains.chainOf(made(null))).toBe(UNBOUND);
    expect(await chains.restrictedOf(made(null))).toBe(false);
  });

  it("takes ancestors as last read while the database cannot be reached, and never leaves one out", async () => {
    const { db, chains } = lineageDatabase();
    db.down = true;
    await expect(chains.chainOf(made(null))).rejects.toBeInstanceOf(StoreUnavailable);
    db.down = false;
    await chains.chainOf(made(null));
    db.down = true;
    chains.listening("lost");
    expect(limits(await chains.chainOf(made(null)))).toEqual([["key:1", 50]]);
  });
});
