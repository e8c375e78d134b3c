import { defineConfig } from "vitest/config";

// Two groups, one after the other: the suites, then the benchmarks' runs (the short run of `npm run
// bench`, a small one of `npm run bench:operator`), each of which loads both cores for up to a minute
// and would otherwise squeeze the suites' timing bounds (and they its figures); the benchmarks also run
// one after the other.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    globalSetup: ["test/support/global-setup.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "suites",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          setupFiles: ["test/support/conformance-setup.ts"],
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: { name: "bench", include: ["bench/**/*.test.ts"], fileParallelism: false, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
