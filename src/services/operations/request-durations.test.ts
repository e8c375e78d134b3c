import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { BUCKETS, RequestDurations } from "./request-durations.ts";

describe("RequestDurations", () => {
  it("writes out what prom-client's own histogram writes for the same observations", async () => {
    const ours = new Registry();
    const durations = new RequestDurations();
    ours.registerMetric(durations.asMetric());
    const theirs = new Registry();
    const histogram = new Histogram({ name: durations.name, help: durations.help, labelNames: ["method", "route"], registers: [theirs], buckets: BUCKETS });
    const observations: [string, string, number][] = [
      ["GET", "/auth", 0.0004], ["GET", "/auth", 0.0005], ["GET", "/auth", 0.0007], ["GET", "/auth", 12],
      ["POST", "/verify", 0.003], ["POST", "/verify", 0.3], ["GET", "/keys/self", 0],
    ];
    for (const [method, route, seconds] of observations) {
      durations.observe(durations.series(method, route), seconds);
      histogram.observe({ method, route }, seconds);
    }
    const lines = (text: string) => text.split("\n").filter(Boolean).sort();
    expect(lines(await ours.metrics())).toEqual(lines(await theirs.metrics()));
  });
});
