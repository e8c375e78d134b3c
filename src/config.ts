import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { GRACE_PERIOD_SECONDS } from "./domain/keys/expiry.ts";
import { LEAK_POLICIES, type LeakPolicy } from "./domain/policy/policy.ts";
import { DEFAULT_EXPIRY_NOTICES, parseExpiryNotices } from "./domain/webhooks/expiry-notices.ts";
import { parseMasterKey } from "./domain/seal.ts";
import { DEFAULT_RETENTION, parseRetention, type Retention } from "./domain/analytics/retention.ts";
import { parseTrustedProxies, type TrustedProxies } from "./http/verification/client-address.ts";
import { AUTH_GATEWAYS, type AuthGateway } from "./http/verification/auth-gateway.ts";
import { GITHUB_KEYS_URL } from "./services/leaks/github-keys.ts";

// Every setting keyplane reads from the environment is read and checked here, and only here
// (README.md, "Configuration"); the rest of the code takes what it needs as arguments.
const seconds = z.coerce.number().positive();
const flag = z.enum(["true", "false"], { error: "must be true or false" }).default("false").transform((v) => v === "true");
const env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: z.string().min(1).optional(),
  KEYPLANE_DATA_DIR: z.string().min(1).default("./.keyplane"),
  KEYPLANE_ADMIN_TOKEN: z.string().min(32, "KEYPLANE_ADMIN_TOKEN must be at least 32 characters").optional(),
  KEYPLANE_MASTER_KEY: z.string().optional(),
  KEYPLANE_RUNTIME_HEADER: z.string().regex(/^[A-Za-z0-9-]+$/, "KEYPLANE_RUNTIME_HEADER must be a header name").default("X-SVC-APIKey"),
  KEYPLANE_OPERATOR: z.enum(["on", "off", "auto"]).default("auto"),
  KEYPLANE_DATABASE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  KEYPLANE_STALE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  KEYPLANE_TRUSTED_PROXIES: z.string().default("").transform((text, c) => {
    try {
      return parseTrustedProxies(text);
    } catch (error) {
      c.addIssue({ code: "custom", message: `KEYPLANE_TRUSTED_PROXIES: ${(error as Error).message}` });
      return z.NEVER;
    }
  }),
  KEYPLANE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  // Whose headers /auth reads the original request from (docs/gateways.md): one gateway's, never another's.
  KEYPLANE_AUTH_GATEWAY: z.enum(AUTH_GATEWAYS, { error: `KEYPLANE_AUTH_GATEWAY must be one of ${AUTH_GATEWAYS.join(", ")}` }).default("nginx"),
  // Up to a billion, more than a process answers in a minute: in effect no throttling, for a keyplane
  // whose callers limit their own rates. The throttle's memory follows the failures, not the limit.
  KEYPLANE_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000_000).default(60),
  // Leak response (docs/leaks.md): what a report does where no policy says, and where GitHub's keys are.
  KEYPLANE_LEAK_POLICY: z.enum(LEAK_POLICIES).default("rotate"),
  KEYPLANE_LEAK_GRACE_SECONDS: z.coerce.number().int().min(GRACE_PERIOD_SECONDS.min).max(GRACE_PERIOD_SECONDS.max).default(0),
  KEYPLANE_GITHUB_KEYS_URL: z.url({ protocol: /^https?$/, error: "KEYPLANE_GITHUB_KEYS_URL must be an http(s) URL" })
    .default(GITHUB_KEYS_URL),
  // Webhooks (docs/webhooks.md): where they may send, and when key.expiring is sent.
  KEYPLANE_WEBHOOK_ALLOW_HTTP: flag,
  KEYPLANE_WEBHOOK_ALLOW_PRIVATE: flag,
  KEYPLANE_EXPIRY_NOTICES: z.string().default(DEFAULT_EXPIRY_NOTICES).transform((text, c) => {
    try {
      return parseExpiryNotices(text);
    } catch (error) {
      c.addIssue({ code: "custom", message: `KEYPLANE_EXPIRY_NOTICES: ${(error as Error).message}` });
      return z.NEVER;
    }
  }),
  // Usage analytics (docs/analytics.md): counted unless off; how long minutes, hours and days are kept.
  KEYPLANE_ANALYTICS: z.enum(["on", "off"]).default("on"),
  KEYPLANE_ANALYTICS_RETENTION: z.string().default(DEFAULT_RETENTION).transform((text, c) => {
    try {
      return parseRetention(text);
    } catch (error) {
      c.addIssue({ code: "custom", message: `KEYPLANE_ANALYTICS_RETENTION: ${(error as Error).message}` });
      return z.NEVER;
    }
  }),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // The operator's (docs/operator.md).
  POD_NAME: z.string().min(1).optional(),
  POD_NAMESPACE: z.string().min(1).optional(),
  KEYPLANE_LEASE_NAMESPACE: z.string().min(1).optional(),
  KEYPLANE_WATCH_NAMESPACE: z.string().min(1).optional(),
  KEYPLANE_NAMESPACE_BINDING: z.enum(["on", "off"]).default("on"),
  KEYPLANE_LEASE_DURATION_SECONDS: seconds.optional(),
  KEYPLANE_RESYNC_SECONDS: seconds.optional(),
  KUBECONFIG: z.string().min(1).optional(),
  KUBERNETES_SERVICE_HOST: z.string().min(1).optional(),
  HOME: z.string().min(1).optional(),
});

export interface OperatorConfig {
  mode: "on" | "off" | "auto";
  /** Where a cluster is configured (a kubeconfig, or a pod's service account); undefined for nowhere. */
  cluster: string | undefined;
  /** This replica in the leader-election Lease: POD_NAME, else host name and pid. */
  identity: string;
  leaseNamespace: string;
  /** Only this namespace's ApiKeys; all namespaces when undefined. */
  watchNamespace: string | undefined;
  /** Whether a Namespace's keyplane.dev/customers bounds the customers its ApiKeys name (KEYPLANE_NAMESPACE_BINDING). */
  namespaceBinding: boolean;
  leaseDurationMs: number | undefined;
  resyncMs: number | undefined;
}

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  adminToken: string | undefined;
  masterKey: Buffer | undefined;
  runtimeHeader: string;
  /** The longest wait for a database connection or statement (KEYPLANE_DATABASE_TIMEOUT_MS). */
  databaseTimeoutMs: number;
  /** How long a key seen valid keeps verifying while the database cannot be reached; 0: not at all. */
  staleMs: number;
  /** Whose X-Forwarded-For names the client (KEYPLANE_TRUSTED_PROXIES). */
  trustedProxies: TrustedProxies;
  /** Failed authentications a client may make in a sliding minute before it is throttled. */
  authFailuresPerMinute: number;
  /** The gateway whose headers /auth reads (KEYPLANE_AUTH_GATEWAY). */
  authGateway: AuthGateway;
  /** Where GET /metrics is served (on HOST); undefined: no metrics (KEYPLANE_METRICS_PORT). */
  metricsPort: number | undefined;
  operator: OperatorConfig;
  /** Leak response: the default leak policy, a leak rotation's grace, GitHub's key list (docs/leaks.md). */
  leaks: { policy: LeakPolicy; graceSeconds: number; githubKeysUrl: string };
  /** Webhooks: http allowed, private addresses allowed, and the expiry notices in seconds, furthest first (docs/webhooks.md). */
  webhooks: { allowHttp: boolean; allowPrivate: boolean; expiryNotices: number[] };
  /** Usage analytics: whether verdicts are counted (KEYPLANE_ANALYTICS), and how long each grain is kept. */
  analytics: { counting: boolean; retention: Retention };
  logLevel: string;
}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const parsed = env.safeParse(source);
  if (!parsed.success) throw new Error(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const e = parsed.data;
  if (e.DATABASE_URL && !e.KEYPLANE_MASTER_KEY) {
    throw new Error("invalid configuration: KEYPLANE_MASTER_KEY is required with DATABASE_URL (it is generated only for the embedded database)");
  }
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: resolve(e.KEYPLANE_DATA_DIR),
    adminToken: e.KEYPLANE_ADMIN_TOKEN,
    masterKey: e.KEYPLANE_MASTER_KEY ? parseMasterKey(e.KEYPLANE_MASTER_KEY) : undefined,
    runtimeHeader: e.KEYPLANE_RUNTIME_HEADER,
    databaseTimeoutMs: e.KEYPLANE_DATABASE_TIMEOUT_MS,
    staleMs: e.KEYPLANE_STALE_SECONDS * 1000,
    trustedProxies: e.KEYPLANE_TRUSTED_PROXIES,
    authFailuresPerMinute: e.KEYPLANE_AUTH_FAILURES_PER_MINUTE,
    authGateway: e.KEYPLANE_AUTH_GATEWAY,
    metricsPort: e.KEYPLANE_METRICS_PORT,
    operator: {
      mode: e.KEYPLANE_OPERATOR,
      cluster: clusterConfigured(e),
      identity: e.POD_NAME ?? `${hostname()}-${process.pid}`,
      leaseNamespace: e.KEYPLANE_LEASE_NAMESPACE ?? e.POD_NAMESPACE ?? "default",
      watchNamespace: e.KEYPLANE_WATCH_NAMESPACE,
      namespaceBinding: e.KEYPLANE_NAMESPACE_BINDING === "on",
      leaseDurationMs: e.KEYPLANE_LEASE_DURATION_SECONDS !== undefined ? e.KEYPLANE_LEASE_DURATION_SECONDS * 1000 : undefined,
      resyncMs: e.KEYPLANE_RESYNC_SECONDS !== undefined ? e.KEYPLANE_RESYNC_SECONDS * 1000 : undefined,
    },
    leaks: { policy: e.KEYPLANE_LEAK_POLICY, graceSeconds: e.KEYPLANE_LEAK_GRACE_SECONDS, githubKeysUrl: e.KEYPLANE_GITHUB_KEYS_URL },
    webhooks: { allowHttp: e.KEYPLANE_WEBHOOK_ALLOW_HTTP, allowPrivate: e.KEYPLANE_WEBHOOK_ALLOW_PRIVATE, expiryNotices: e.KEYPLANE_EXPIRY_NOTICES },
    analytics: { counting: e.KEYPLANE_ANALYTICS === "on", retention: e.KEYPLANE_ANALYTICS_RETENTION },
    logLevel: e.LOG_LEVEL,
  };
}

/** Where a cluster is configured: a kubeconfig (KUBECONFIG or ~/.kube/config), or a pod's service account. */
function clusterConfigured(e: Pick<z.output<typeof env>, "KUBECONFIG" | "HOME" | "KUBERNETES_SERVICE_HOST">): string | undefined {
  if (e.KUBECONFIG) return `KUBECONFIG=${e.KUBECONFIG}`;
  const home = join(e.HOME ?? homedir(), ".kube", "config");
  if (existsSync(home)) return home;
  if (e.KUBERNETES_SERVICE_HOST && existsSync("/var/run/secrets/kubernetes.io/serviceaccount/token")) return "in-cluster service account";
  return undefined;
}

export interface Secrets {
  adminToken: string;
  masterKey: Buffer;
  /**
   * Where the admin token came from: KEYPLANE_ADMIN_TOKEN, generated just now (the one time it is
   * shown), or kept in the data dir from an earlier start.
   */
  adminTokenFrom: "environment" | "generated" | "data dir";
}

/** The admin token and master key: from the configuration, else kept in (or first generated into) the data dir. */
export async function loadSecrets(config: Config): Promise<Secrets> {
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const masterKey = config.masterKey
    ? config.masterKey
    : parseMasterKey((await keptOrGenerated(join(config.dataDir, "master-key"), () => randomBytes(32).toString("hex"))).value);
  if (config.adminToken) return { adminToken: config.adminToken, masterKey, adminTokenFrom: "environment" };
  const admin = await keptOrGenerated(adminTokenPath(config), () => "kpa_" + randomBytes(32).toString("base64url"));
  return { adminToken: admin.value, masterKey, adminTokenFrom: admin.generated ? "generated" : "data dir" };
}

/** Where a generated admin token is kept. */
export function adminTokenPath(config: Pick<Config, "dataDir">): string {
  return join(config.dataDir, "admin-token");
}

async function keptOrGenerated(path: string, generate: () => string): Promise<{ value: string; generated: boolean }> {
  try {
    return { value: (await readFile(path, "utf8")).trim(), generated: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const value = generate();
  // "wx": two processes starting at once must not both generate; the loser reads the winner's.
  try {
    await writeFile(path, value + "\n", { mode: 0o600, flag: "wx" });
    return { value, generated: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return { value: (await readFile(path, "utf8")).trim(), generated: false };
  }
}

// The `keyplane keys` command's settings: where the API is, and the key it calls it with.
const cliEnv = z.object({
  KEYPLANE_URL: z.url({ protocol: /^https?$/, error: "KEYPLANE_URL must be an http(s) URL" }).default("http://127.0.0.1:8080"),
  KEYPLANE_TOKEN: z.string().min(1).optional(),
});

export function loadCliConfig(source: NodeJS.ProcessEnv = process.env): { url: string; token: string | undefined } {
  const parsed = cliEnv.safeParse(source);
  if (!parsed.success) throw new Error(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return { url: parsed.data.KEYPLANE_URL, token: parsed.data.KEYPLANE_TOKEN };
}
