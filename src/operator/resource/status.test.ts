import { describe, expect, it } from "vitest";
import { conditions } from "./status.ts";

const earlier = new Date("2025-05-01T11:00:00Z");
const now = new Date("2025-05-01T12:00:00Z");
const conflict = { status: "False", reason: "KeyConflict", message: "managed by ApiKey team-b/payments" } as const;

describe("conditions", () => {
  it("adds Stalled with Ready's reason when a person must act, keeping its transition time while it holds", () => {
    const first = conditions(undefined, conflict, 3, earlier);
    expect(first).toEqual([
      { type: "Ready", ...conflict, lastTransitionTime: "2025-05-01T11:00:00Z", observedGeneration: 3 },
      { type: "Stalled", status: "True", reason: "KeyConflict", message: conflict.message, lastTransitionTime: "2025-05-01T11:00:00Z", observedGeneration: 3 },
    ]);
    const again = conditions({ conditions: first }, conflict, 4, now);
    expect(again.map((c) => [c.type, c.lastTransitionTime, c.observedGeneration])).toEqual([
      ["Ready", "2025-05-01T11:00:00Z", 4],
      ["Stalled", "2025-05-01T11:00:00Z", 4],
    ]);
  });

  it("says Reconciling while it retries an error, and drops Stalled and Reconciling once Ready", () => {
    const failing = conditions(undefined, { status: "False", reason: "Error", message: "500 etcd timeout" }, 1, earlier);
    expect(failing.map((c) => [c.type, c.status])).toEqual([["Ready", "False"], ["Reconciling", "True"]]);
    const ready = conditions({ conditions: failing }, { status: "True", reason: "Provisioned", message: "key in Secret" }, 1, now);
    expect(ready).toEqual([
      { type: "Ready", status: "True", reason: "Provisioned", message: "key in Secret", lastTransitionTime: "2025-05-01T12:00:00Z", observedGeneration: 1 },
    ]);
  });

  it("says Reconciling with the work's own reason while a Ready key is being worked on", () => {
    const rotating = { status: "True", reason: "Provisioned", message: "key in Secret", progress: { reason: "Rotating", message: "waiting for Deployment a/b" } } as const;
    expect(conditions(undefined, rotating, 2, now).map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ["Ready", "True", "Provisioned", "key in Secret"],
      ["Reconciling", "True", "Rotating", "waiting for Deployment a/b"],
    ]);
  });
});
