import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { startServerProcess, type ServerProcess } from "./process.ts";
import { statusesOf, type Traffic } from "./traffic.ts";

// Replicas of one deployment: `keyplane serve` processes on one database, sharing the master key and
// the admin token (docs/high-availability.md), for the suites that run several (concurrency,
// policy-concurrency) and those that take the database away under load (failover, postgres-restart,
// outage-verdicts) and count every answer meanwhile: what they ask with, how they start and stop the
// processes, and the checks every answer of the load goes through.

export interface Answer {
  status: number;
  body: unknown;
}

/** One request over HTTP, as a client sends it; status 0 when refused at the socket, or unanswered (never allowed). */
export async function call(url: string, method: string, path: string, token?: string, body?: object, headers: Record<string, string> = {}): Promise<Answer> {
  try {
    const res = await fetch(url + path, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  } catch {
    return { status: 0, body: undefined };
  }
}

/** A token of keyplane's format that no key has. */
export const neverSeen = () => `XI${randomBytes(16).toString("hex").toUpperCase()}`;
/** How long a fault lasts is the scenario itself, not a wait for something to happen. */
export const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Replica {
  name: string;
  p: ServerProcess;
}

export interface ReplicaSet {
  replicas: Replica[];
  adminToken: string;
  /** Answers of the load whose body is not what their status promises (`checked`). */
  wrong: string[];
  /**
   * The check of every answer of the load: records in `wrong` one whose body is not what its status
   * promises, a 503 without the JSON error body of docs/api.md ("When the database cannot be
   * reached"), or, for a `verdict` (POST /verify), a 200 that is not VALID.
   */
  checked(what: string, answer: Promise<Answer>, verdict?: boolean): Promise<Answer>;
  /** Starts another process on the database, as the set's others are. */
  add(name: string): Promise<Replica>;
  /** A customer made through the first replica, and its root key's token. */
  customerWithRoot(name: string): Promise<string>;
  /** SIGTERM to each process still running, as a process is stopped; SIGKILL if one has not stopped within 15 s. Then their data directories go. */
  stop(): Promise<void>;
}

/**
 * Starts a process for each of `names` on `databaseUrl`, all at once (they race to migrate an empty
 * database, as replicas starting together do), with no throttling of failed authentications (a load's
 * never-seen tokens fail from one address all along), and `env` besides.
 */
export async function startReplicas(databaseUrl: string, names: string[], env: Record<string, string> = {}): Promise<ReplicaSet> {
  const masterKey = randomBytes(32).toString("hex");
  const adminToken = "kpa_replicas_" + randomBytes(24).toString("hex");
  const dataDirs: string[] = [];
  const start = async (name: string): Promise<Replica> => {
    const dataDir = await mkdtemp(join(tmpdir(), "keyplane-replica-"));
    dataDirs.push(dataDir);
    const p = await startServerProcess({
      DATABASE_URL: databaseUrl,
      KEYPLANE_MASTER_KEY: masterKey,
      KEYPLANE_ADMIN_TOKEN: adminToken,
      KEYPLANE_DATA_DIR: dataDir,
      KEYPLANE_AUTH_FAILURES_PER_MINUTE: "1000000000",
      ...env,
    });
    return { name, p };
  };
  const replicas = await Promise.all(names.map(start));
  const wrong: string[] = [];
  return {
    replicas,
    adminToken,
    wrong,
    async add(name) {
      const replica = await start(name);
      replicas.push(replica);
      return replica;
    },
    async checked(what, answer, verdict = false) {
      const a = await answer;
      const body = a.body as { status?: unknown; error?: unknown; message?: unknown; code?: unknown } | undefined;
      if (a.status === 503 && !(body?.status === 503 && body.error === "unavailable" && typeof body.message === "string")) wrong.push(`${what}: 503 ${JSON.stringify(a.body)}`);
      if (verdict && a.status === 200 && body?.code !== "VALID") wrong.push(`${what}: ${JSON.stringify(a.body)}`);
      return a;
    },
    async customerWithRoot(name) {
      const url = replicas[0]!.p.url;
      expect((await call(url, "POST", "/admin/customers", adminToken, { name })).status).toBe(201);
      const root = await call(url, "POST", `/admin/customers/${name}/keys`, adminToken, { name: "root" });
      expect(root.status, JSON.stringify(root.body)).toBe(200);
      return (root.body as { keyId: string }).keyId;
    },
    async stop() {
      await Promise.all(
        replicas.filter((r) => !exited(r)).map(async (r) => {
          const kill = setTimeout(() => r.p.child.kill("SIGKILL"), 15_000);
          await r.p.stop();
          clearTimeout(kill);
        }),
      );
      await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

/** Each replica's load (traffic[i] on replicas[i]): every kind answered, and only ever with a status `allowed` lists for it. */
export function expectOnlyAllowed<Kind extends string>(replicas: Replica[], traffic: Traffic<Kind>[], allowed: Record<Kind, number[]>, label = ""): void {
  for (const [i, t] of traffic.entries()) {
    for (const kind of Object.keys(allowed) as Kind[]) {
      const seen = statusesOf(t.samples.filter((s) => s.what === kind));
      const what = `${label}${replicas[i]!.name} ${kind}: statuses ${seen}`;
      expect(seen.length, what).toBeGreaterThan(0);
      expect(seen.filter((status) => !allowed[kind].includes(status)), what).toEqual([]);
    }
  }
}

const exited = (r: Replica) => r.p.child.exitCode !== null || r.p.child.signalCode !== null;

/** Neither process has exited (what each wrote last, if one did). */
export function expectAlive(replicas: Replica[]): void {
  const exits = replicas.filter(exited).map((r) => `${r.name} exited (${r.p.child.exitCode ?? r.p.child.signalCode})`);
  expect(exits, exits.length ? replicas.map((r) => `${r.name}: ${r.p.stdout().slice(-1_500)}`).join("\n") : "").toEqual([]);
}

/** Polls GET /keys/self of `token` on `r` until it answers `status`: when it did. */
export async function answersWith(r: Replica, token: string, status: number, limitMs: number): Promise<number> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    const a = await call(r.p.url, "GET", "/keys/self", token);
    if (a.status === status) return performance.now();
    if (performance.now() > deadline) throw new Error(`${r.name} still answers ${a.status} for the key, not ${status}`);
    await hold(5);
  }
}
