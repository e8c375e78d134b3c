import { percentile, type LoadResult } from "./load.ts";
import type { Metered } from "./processes.ts";

// A subject measured against its baseline in rounds, in turn (bench/README.md, "Slow rounds"): the way
// every ratio of the benchmark is taken, so that one disturbed run of either (this machine is shared)
// does not make a figure.

/** What the run (bench/run.ts) hands a phase measured in rounds: gateway, policy, lineage, webhooks. */
export interface RoundsTools {
  /** Whether to wait for PostgreSQL's counts to settle around each count (the full run). */
  settle: boolean;
  connections: number;
  /** Rounds of each subject against its baseline. */
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  say(text: string): void;
  metered(name: string, servers: Metered[], run: () => Promise<LoadResult>): Promise<LoadResult>;
  expectAnswers(what: string, result: LoadResult, allowed: string[]): void;
  problem(text: string): void;
}

export interface Rounds {
  baselines: LoadResult[];
  subjects: LoadResult[];
  /** For each subject run, the mean throughput of the baseline runs either side of it. */
  around: number[];
  /** Each subject run's throughput ÷ its `around`. */
  ratios: number[];
}

export const round = (n: number, digits = 3) => Number(n.toFixed(digits));
export const median = (values: number[]) => percentile([...values].sort((x, y) => x - y), 50);
export const each = (values: number[], digits = 3) => values.map((v) => round(v, digits)).join(", ");

/**
 * The baseline first and last (baseline, subject, baseline, ..., baseline), `rounds` subject runs: an
 * odd number, so that the median is one of them.
 */
export async function inTurn(rounds: number, baseline: (round: number) => Promise<LoadResult>, subject: (round: number) => Promise<LoadResult>): Promise<Rounds> {
  const baselines = [await baseline(1)];
  const subjects: LoadResult[] = [];
  for (let i = 1; i <= rounds; i++) {
    subjects.push(await subject(i));
    baselines.push(await baseline(i + 1));
  }
  const around = subjects.map((_, i) => (baselines[i]!.requestsPerSecond + baselines[i + 1]!.requestsPerSecond) / 2);
  return { baselines, subjects, around, ratios: subjects.map((s, i) => s.requestsPerSecond / around[i]!) };
}

/** Each round's ratio and the throughputs it came from, for a figure's details. */
export function roundsDetail({ subjects, around, ratios }: Rounds): string {
  return `rounds ${each(ratios)}: ${subjects.map((s, i) => `${Math.round(s.requestsPerSecond)} vs ${Math.round(around[i]!)}`).join(", ")} req/s`;
}
