import { defineConfig } from "vitest/config";

// Two groups, one after the other: the suites, then the benchmark's short run, which loads both cores
// for most of a minute and would otherwise squeeze the suites' timing bounds (and they its figures).
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
        test: { name: "bench", include: ["bench/**/*.test.ts"], sequence: { groupOrder: 2 } },
      },
    ],
  },
});
