import { expect, inject, it } from "vitest";
import { deploymentMemoryLimit, soak } from "./soak.ts";

// `npm run bench:soak` for 20 s instead of ten minutes, after a fiftieth of its fill and 5 s of its
// warm-up, so that it cannot rot: every kind of request answered, no 500, no connection refused and no
// 429 (throttling would turn the never-seen tokens away before the key cache), memory sampled, every
// figure a number. Its targets (the peak within 65% of the deployment's limit, flat over the second
// half) are for ten minutes after the warm-up and are not asserted here: a shared machine's 20 s say
// little of them (bench/README.md, "Soak").
it("runs every kind of request against one keyplane and samples its memory", { timeout: 90_000 }, async (ctx) => {
  const server = inject("postgresUrl");
  ctx.skip(!server, "no PostgreSQL server reachable (set KEYPLANE_TEST_PG_URL or run one on 127.0.0.1:5432): the soak runs keyplane on one");
  const result = await soak(20, () => undefined, server!, 0.02, 5);
  expect(result.requests).toBeGreaterThan(100);
  expect(Object.keys(result.statuses).filter((status) => status === "0" || status === "429" || status.startsWith("5"))).toEqual([]);
  expect(result.fill.keys).toBe(800);
  expect(result.memory.afterFill.keyCacheEntries).toBeGreaterThanOrEqual(result.fill.keys + result.fill.unknownTokens);
  expect(result.warmUp.requests).toBeGreaterThan(0);
  expect(result.warmUp.samples).toBeGreaterThan(2); // the flat bar is judged after them
  expect(result.samplesMiB.length).toBeGreaterThan(result.fill.samples + result.warmUp.samples + 10);
  for (const n of [result.peakMiB, result.peakShare, result.secondHalf.firstMiB, result.secondHalf.maxMiB, result.secondHalf.risePercent]) expect(Number.isFinite(n)).toBe(true);
  for (const half of [result.halves.first, result.halves.second]) for (const n of Object.values(half)) expect(Number.isFinite(n)).toBe(true);
  expect(result.halves.first.webhookHeapMiB).toBeGreaterThan(0); // keyplane serve sends webhooks from a thread of its own
  expect(result.limitMiB).toBe(deploymentMemoryLimit() / 2 ** 20);
});
