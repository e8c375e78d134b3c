import { StoreUnavailable } from "../domain/errors.ts";

// DATABASE_URL may name several hosts, the way libpq reads them (postgres://u:p@h1:5433,h2:5434/db):
// the servers of one PostgreSQL made highly available (Patroni), of which one is the primary at a time.
// node-postgres reads one host only, so the list is read here, each host gets a connection string of
// its own, and the primary is found among them (docs/high-availability.md). Nothing above store/
// knows that there may be several.

export interface Host {
  host: string;
  port: number;
}

export interface HostList {
  hosts: readonly Host[];
  /** A connection string to one host of the list, everything else as DATABASE_URL says. */
  urlFor(host: Host): string;
}

/** `host:port`, for the log (no user, no password). */
export const hostName = (h: Host): string => (h.host.includes(":") ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`);

const DEFAULT_PORT = 5432;
// scheme, user info (up to the authority's last @), hosts, and the rest (path, query, fragment).
const URL_PARTS = /^(postgres(?:ql)?:\/\/)(?:([^/?#]*)@)?([^/?#@]*)(.*)$/s;
const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d+))?$/;

/**
 * The hosts a connection string names. One host: the string is used as it is, exactly as before
 * several were possible. Several: each must be `host` or `host:port` (`[v6]:port`); a malformed list
 * is refused here, at start, without repeating the string (it holds a password).
 */
export function parseHosts(connectionString: string): HostList {
  const parts = URL_PARTS.exec(connectionString);
  const list = parts?.[3]?.split(",") ?? [];
  if (!parts || list.length < 2) {
    const single = parts && list[0] ? hostPort(list[0]) : undefined;
    return { hosts: [single ?? { host: "database", port: DEFAULT_PORT }], urlFor: () => connectionString };
  }
  const [, scheme, userInfo, , rest] = parts as unknown as [string, string, string | undefined, string, string];
  const hosts = list.map((entry, i) => {
    const parsed = hostPort(entry);
    if (!parsed) throw new Error(`invalid configuration: DATABASE_URL: host ${i + 1} of ${list.length} is not host or host:port`);
    return parsed;
  });
  const prefix = scheme + (userInfo !== undefined ? `${userInfo}@` : "");
  return { hosts, urlFor: (h) => `${prefix}${hostName(h)}${rest}` };
}

function hostPort(entry: string): Host | undefined {
  const m = HOST_PORT.exec(entry.trim());
  if (!m) return undefined;
  const port = m[3] === undefined ? DEFAULT_PORT : Number(m[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return undefined;
  return { host: m[1] ?? m[2]!, port };
}

/** What a host said when asked whether it takes writes. */
export type Role = "primary" | "standby";

export interface ChooserOptions {
  hosts: readonly Host[];
  /**
   * Connects to one host and asks whether it takes writes: neither in recovery nor read-only. Rejects
   * when the host cannot be reached.
   */
  probe: (host: Host) => Promise<Role>;
  /** The longest a round of probes waits for the hosts that have not answered. */
  timeoutMs: number;
  /**
   * After a round that found no primary, how long before the next may start: meanwhile every caller is
   * told at once that the database is unreachable, so a failover does not become a flood of probes.
   */
  retryMs: number;
  /** The clock `retryMs` is measured on (performance.now). */
  now?: () => number;
}

/**
 * Which of several hosts is the primary: the one last found, until it is forgotten (a connection to
 * it failed, or it said it was not the primary); then every host is probed at once, and the first to
 * say it takes writes is the answer, whatever the others are still doing. Concurrent callers share one
 * round. With a single host there is nothing to choose: it is the answer, and its connections say
 * whether it takes writes (postgres.ts).
 */
export class PrimaryChooser {
  readonly #hosts: readonly Host[];
  readonly #probe: (host: Host) => Promise<Role>;
  readonly #timeoutMs: number;
  readonly #retryMs: number;
  readonly #now: () => number;
  #known: Host | undefined;
  #round: Promise<Host> | undefined;
  #failedAt = -Infinity;
  #failure: StoreUnavailable | undefined;

  constructor({ hosts, probe, timeoutMs, retryMs, now = () => performance.now() }: ChooserOptions) {
    if (hosts.length === 0) throw new Error("no database host");
    this.#hosts = hosts;
    this.#probe = probe;
    this.#timeoutMs = timeoutMs;
    this.#retryMs = retryMs;
    this.#now = now;
    if (hosts.length === 1) this.#known = hosts[0];
  }

  /** The host found primary, if it has not been forgotten since. */
  get known(): Host | undefined {
    return this.#known;
  }

  /** The primary: the one known, else the outcome of a round of probes (StoreUnavailable when none answers as primary). */
  primary(): Promise<Host> {
    if (this.#known) return Promise.resolve(this.#known);
    if (this.#round) return this.#round;
    if (this.#failure && this.#now() - this.#failedAt < this.#retryMs) return Promise.reject(this.#failure);
    const round = this.#probeAll().finally(() => {
      if (this.#round === round) this.#round = undefined;
    });
    this.#round = round;
    return round;
  }

  /** `host` failed a connection, or said it does not take writes: the next caller looks again. */
  forget(host: Host): void {
    if (this.#hosts.length > 1 && this.#known === host) this.#known = undefined;
  }

  #probeAll(): Promise<Host> {
    return new Promise<Host>((resolve, reject) => {
      const answers: string[] = [];
      let left = this.#hosts.length;
      let settled = false;
      const fail = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#failedAt = this.#now();
        this.#failure = new StoreUnavailable(`no primary among ${answers.join(", ")}`.slice(0, 200));
        reject(this.#failure);
      };
      const timer = setTimeout(() => {
        for (const h of this.#hosts) if (!answers.some((a) => a.startsWith(`${hostName(h)} `))) answers.push(`${hostName(h)} no answer`);
        fail();
      }, this.#timeoutMs);
      for (const host of this.#hosts) {
        this.#probe(host).then(
          (role) => {
            answers.push(`${hostName(host)} ${role}`);
            if (role !== "primary" || settled) return;
            settled = true;
            clearTimeout(timer);
            this.#known = host;
            this.#failure = undefined;
            resolve(host);
          },
          (error: unknown) => answers.push(`${hostName(host)} ${(error as { code?: string }).code ?? "unreachable"}`),
        ).finally(() => {
          if (--left === 0) fail();
        });
      }
    });
  }
}
