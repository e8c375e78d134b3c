import { describe } from "vitest";

// A suite that needs programs the machine may not have (PostgreSQL's binaries, Patroni and etcd):
// without them it is skipped, and says why in its title; under CI=true it runs all the same, and fails.
export function describeNeeding(unavailable: string | undefined, title: string, suite: () => void): void {
  const skip = unavailable !== undefined && process.env.CI !== "true";
  describe.skipIf(skip)(skip ? `${title} (skipped: ${unavailable})` : title, suite);
}
