import { describe, expect, it } from "vitest";
import { decideRotation, nextRotationAt, type RotationDecision, type RotationInput } from "./rotation.ts";

const issuedAt = new Date("2025-05-01T12:00:00Z");
const at = (seconds: number) => new Date(issuedAt.getTime() + seconds * 1000);
const daily = { everyMs: 86_400_000, gracePeriodMs: 3_600_000, restartWorkloads: true };
const underWay = { previousKey: { id: 17, hint: "XI…7798", expiresAt: at(3600).toISOString() }, lastRequest: "1" };

function input(over: Partial<RotationInput> = {}): RotationInput {
  return { rotation: daily, request: undefined, status: undefined, provisioned: true, issuedAt, rolledOut: false, now: at(60), ...over };
}

const cases: { name: string; input: RotationInput; decision: RotationDecision }[] = [
  { name: "waits for every, requeued at that instant", input: input(), decision: { action: "none", requeueAt: at(86_400) } },
  { name: "rotates once every has passed since the key was issued", input: input({ now: at(86_400) }), decision: { action: "rotate", cause: "every" } },
  { name: "does nothing without spec.rotation", input: input({ rotation: undefined, now: at(10 ** 9) }), decision: { action: "none" } },
  { name: "rotates for a new annotation value", input: input({ request: "2", status: { lastRequest: "1" } }), decision: { action: "rotate", cause: "request" } },
  { name: "rotates for an annotation value also without spec.rotation", input: input({ rotation: undefined, request: "a" }), decision: { action: "rotate", cause: "request" } },
  { name: "ignores an annotation value already acted on", input: input({ request: "1", status: { lastRequest: "1" } }), decision: { action: "none", requeueAt: at(86_400) } },
  { name: "records the annotation of a new resource without rotating", input: input({ request: "1", provisioned: false }), decision: { action: "record", request: "1" } },
  { name: "retires the replaced key as soon as every workload rolled out", input: input({ status: underWay, rolledOut: true }), decision: { action: "retire", cause: "rolledOut" } },
  { name: "waits for the rollout until the grace period ends", input: input({ status: underWay }), decision: { action: "await", requeueAt: at(3600) } },
  { name: "retires the replaced key at the grace period's end in any case", input: input({ status: underWay, now: at(3600) }), decision: { action: "retire", cause: "gracePeriodEnded" } },
  { name: "finishes the rotation under way before acting on a new request", input: input({ status: underWay, request: "2" }), decision: { action: "await", requeueAt: at(3600) } },
];

describe("decideRotation", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    expect(decideRotation(c.input)).toEqual(c.decision);
  });
});

describe("nextRotationAt", () => {
  it("is every after the key was issued, and nothing without spec.rotation", () => {
    expect(nextRotationAt(daily, issuedAt)).toEqual(at(86_400));
    expect(nextRotationAt(undefined, issuedAt)).toBeUndefined();
  });
});
