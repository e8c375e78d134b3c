import { describe, expect, it } from "vitest";
import { childAncestors, isRestricted, isSelf, isWithin, keyHolder, policySources, reaches, type AncestorPolicy, type KeyCaller } from "./lineage.ts";

// Who made a key, and what binds it (docs/api.md, "Restricted keys").
const hourly = { ratelimits: [{ name: "hourly", limit: 1, windowSeconds: 3600 }] };
const ips = { restrictions: { ips: ["203.0.113.0/24"] } };

// root (1) made partner (5), which rotated into 9 (lineage 5); 9 made friend (12); friend made 14.
const partner = { id: 9, lineage: 5, ancestors: [1] };
const friend = { id: 12, lineage: 12, ancestors: childAncestors(partner) };
const friendsChild = { id: 14, lineage: 14, ancestors: childAncestors(friend) };
const sibling = { id: 7, lineage: 7, ancestors: [1] };
const caller = (key: typeof partner, restricted: boolean): KeyCaller => ({ ...key, restricted });

describe("lineage", () => {
  it("records a child's ancestors by lineage, outermost first: a rotated maker stays the same ancestor", () => {
    expect(friend.ancestors).toEqual([1, 5]);
    expect(friendsChild.ancestors).toEqual([1, 5, 12]);
  });

  it("holds a key's own counters by its lineage, so that a rotation continues them", () => {
    expect(keyHolder(partner)).toBe("key:5");
    expect(keyHolder({ lineage: 5 })).toBe("key:5");
  });

  it.each([
    ["a key with a policy of its own", hourly, [], true],
    ["a key whose ancestor has one", null, [{ policy: null }, { policy: ips }], true],
    ["a key whose ancestor has only a leak policy", null, [{ policy: { leakPolicy: "notify" as const } }], true],
    ["a key with no policy anywhere above it", null, [{ policy: null }], false],
    ["a key nobody made", null, [], false],
  ])("%s: restricted is %s", (_what, own, ancestors, restricted) => {
    expect(isRestricted(own, ancestors)).toBe(restricted);
  });

  it.each([
    ["itself", partner, true],
    ["its predecessor in a grace period", { id: 5, lineage: 5, ancestors: [1] }, true],
    ["its child", friend, true],
    ["its grandchild", friendsChild, true],
    ["its sibling", sibling, false],
    ["its maker", { id: 1, lineage: 1, ancestors: [] }, false],
  ])("a restricted key reaches %s: %s", (_what, key, reached) => {
    expect(isWithin(key, partner.lineage)).toBe(reached);
    expect(reaches(caller(partner, true), key)).toBe(reached);
    expect(reaches(caller(partner, false), key)).toBe(true);
    expect(reaches(undefined, key)).toBe(true);
  });

  it("counts any token of the caller's rotation chain as itself, and nothing else", () => {
    expect(isSelf(caller(partner, false), { id: 5, lineage: 5, ancestors: [1] })).toBe(true);
    expect(isSelf(caller(partner, false), friend)).toBe(false);
    expect(isSelf(undefined, partner)).toBe(false);
  });

  it("orders a chain: entities outermost first, then ancestors oldest first, then the key's own", () => {
    const ancestors: AncestorPolicy[] = [{ lineage: 12, id: 12, policy: null }, { lineage: 5, id: 9, policy: hourly }, { lineage: 1, id: 1, policy: ips }];
    const entities = [
      { scope: "customer" as const, holder: "customer:3", policy: ips },
      { scope: "domain" as const, holder: "domain:4", policy: null },
    ];
    const own = { ...friendsChild, policy: { credits: { remaining: 5 } } };
    expect(policySources(entities, ancestors, own).map(({ scope, holder, id }) => ({ scope, holder, id }))).toEqual([
      { scope: "customer", holder: "customer:3", id: undefined },
      { scope: "key", holder: "key:1", id: 1 },
      { scope: "key", holder: "key:5", id: 9 },
      { scope: "key", holder: "key:14", id: 14 },
    ]);
  });

  it("binds nothing more for a key no one made", () => {
    expect(policySources([], [], { id: 3, lineage: 3, ancestors: [], policy: null })).toEqual([]);
  });
});
