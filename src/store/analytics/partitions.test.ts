import { describe, expect, it } from "vitest";
import { partitionAt, partitionsBetween } from "./partitions.ts";

const t = (text: string) => new Date(text).getTime();

describe("the analytics partitions", () => {
  it.each([
    ["minute", "2026-11-28T23:59:00Z", "usage_minutes_p20261128", "2026-11-28T00:00:00.000Z", "2026-11-29T00:00:00.000Z"],
    ["hour", "2026-12-31T23:00:00Z", "usage_hours_p202612", "2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["day", "2028-02-29T00:00:00Z", "usage_days_p2028", "2028-01-01T00:00:00.000Z", "2029-01-01T00:00:00.000Z"],
  ] as const)("hold a %s bucket in the partition of its day, month or year", (interval, at, name, from, to) => {
    const p = partitionAt(interval, t(at));
    expect({ name: p.name, from: p.from.toISOString(), to: p.to.toISOString() }).toEqual({ name, from, to });
  });

  it("lists every partition between two buckets, the ends' included", () => {
    expect(partitionsBetween("minute", t("2026-11-30T12:00:00Z"), t("2026-12-02T00:00:00Z")).map((p) => p.name))
      .toEqual(["usage_minutes_p20261130", "usage_minutes_p20261201", "usage_minutes_p20261202"]);
    expect(partitionsBetween("hour", t("2026-11-30T12:00:00Z"), t("2026-11-30T13:00:00Z")).map((p) => p.name)).toEqual(["usage_hours_p202611"]);
  });
});
