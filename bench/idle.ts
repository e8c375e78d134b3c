import { createBenchDatabase } from "./database.ts";
import { sleep, startKeyplane, type KeyplaneEnv } from "./processes.ts";

// What one idle keyplane costs its database (docs/scaling.md, "Idle"): the transactions PostgreSQL
// counts for a database of the phase's own, served by one `keyplane serve` (listener on, webhook
// sender on, operator off) to which nothing is sent, over a window of `seconds`.

export interface IdleTools {
  settle: boolean;
  say(text: string): void;
}

export interface IdleResult {
  transactionsPerSecond: number;
  transactions: number;
  windowSeconds: number;
  detail: string;
}

export async function idlePhase(tools: IdleTools, serverUrl: string, env: KeyplaneEnv, seconds: number): Promise<IdleResult> {
  const db = await createBenchDatabase(serverUrl);
  try {
    const server = await startKeyplane("idle", { ...env, databaseUrl: db.url });
    try {
      // Its start (migrations, the first reads) is not idle: let it pass, and its counts reach the statistics.
      tools.say(`idle: one keyplane, nothing sent, ${seconds} s`);
      const reading = () => (tools.settle ? db.settledTransactions() : sleep(1_000).then(() => db.transactions()));
      const start = await reading();
      const from = performance.now();
      await sleep(seconds * 1000);
      const end = await reading();
      const windowSeconds = (performance.now() - from) / 1000;
      const transactions = end - start;
      const transactionsPerSecond = transactions / windowSeconds;
      return {
        transactionsPerSecond, transactions, windowSeconds,
        detail: `${transactions} transactions over ${windowSeconds.toFixed(1)} s, counted by PostgreSQL (pg_stat_database) for a database only it uses`,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await db.drop();
  }
}
