import { describe, expect, it } from "vitest";
import { kstatusConditions, type ReadyReason } from "./status.ts";

// The kstatus conditions for every Ready reason, from a table written from docs/operator.md
// ("Status"), not from the code: R = Ready, P = Reconciling (in progress), S = Stalled; T/F.
const TABLE: Record<ReadyReason, string> = {
  Provisioned: "R=T P=F S=F",
  Error: "R=F P=T S=F",
  InvalidSpec: "R=F P=F S=T",
  ScopeNotFound: "R=F P=F S=T",
  KeyConflict: "R=F P=F S=T",
  SecretConflict: "R=F P=F S=T",
};
const now = new Date("2026-11-23T10:00:00.400Z");
const earlier = "2026-11-23T09:00:00Z";

describe("kstatusConditions", () => {
  it.each(Object.entries(TABLE))("for reason %s: %s, each with the generation and Ready's reason", (reason, row) => {
    const [ready, reconciling, stalled] = row.split(" ").map((cell) => (cell.endsWith("T") ? "True" : "False"));
    const conditions = kstatusConditions(undefined, { status: ready as "True" | "False", reason: reason as ReadyReason, message: "why" }, 7, now);
    expect(conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration, c.lastTransitionTime])).toEqual([
      ["Ready", ready, reason, 7, "2026-11-23T10:00:00Z"],
      ["Reconciling", reconciling, reason, 7, "2026-11-23T10:00:00Z"],
      ["Stalled", stalled, reason, 7, "2026-11-23T10:00:00Z"],
    ]);
    // A True condition explains itself with Ready's message.
    for (const c of conditions) expect(c.message === "why").toBe(c.status === "True" || c.type === "Ready");
  });

  it("moves a condition's lastTransitionTime only when its status flips", () => {
    const before = kstatusConditions(undefined, { status: "False", reason: "Error", message: "down" }, 1, new Date(earlier));
    const after = kstatusConditions({ conditions: before }, { status: "False", reason: "KeyConflict", message: "taken" }, 2, now);
    expect(after.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ["Ready", "False", earlier],
      ["Reconciling", "False", "2026-11-23T10:00:00Z"],
      ["Stalled", "True", "2026-11-23T10:00:00Z"],
    ]);
  });
});
