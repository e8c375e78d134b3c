import pg from "pg";
import type { TestProject } from "vitest/node";

// Finds the PostgreSQL server the database suites also run on: KEYPLANE_TEST_PG_URL, else the local
// server on 127.0.0.1:5432, else a throwaway one through testcontainers where a Docker engine answers.
// With none, the suites run on PGlite alone (and say so); under CI a named server must answer.
declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string | null;
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let stop = async () => {};
  let url: string | null = process.env.KEYPLANE_TEST_PG_URL ?? null;
  if (url) {
    if (!(await answers(url))) throw new Error(`KEYPLANE_TEST_PG_URL does not answer: ${url.replace(/:[^:@/]*@/, ":***@")}`);
  } else if (process.env.KEYPLANE_TEST_PG !== "off") {
    const local = "postgres://postgres@127.0.0.1:5432/postgres";
    if (await answers(local)) url = local;
    else url = await fromContainer((s) => (stop = s));
  }
  if (!url) console.warn("[keyplane tests] no PostgreSQL server reachable: database suites run on PGlite only");
  project.provide("postgresUrl", url);
  return () => stop();
}

async function fromContainer(onStop: (stop: () => Promise<void>) => void): Promise<string | null> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
  } catch {
    return null; // no Docker engine: testcontainers is a convenience, never a requirement
  }
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer("postgres:16-alpine")
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
    .start();
  onStop(async () => void (await container.stop()));
  return `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
}
