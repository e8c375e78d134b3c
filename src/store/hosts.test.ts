import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { StoreUnavailable } from "../domain/errors.ts";
import { hostName, parseHosts, PrimaryChooser, type Host, type Role } from "./hosts.ts";

describe("parseHosts", () => {
  it("leaves a one-host connection string exactly as it is", () => {
    const url = "postgres://keyplane:s3cret@db.example:6432/keyplane?sslmode=require";
    const list = parseHosts(url);
    expect(list.hosts).toEqual([{ host: "db.example", port: 6432 }]);
    expect(list.urlFor(list.hosts[0]!)).toBe(url);
  });

  it("reads several hosts, each with its port or 5432, into a connection string each", () => {
    const list = parseHosts("postgres://u:p%40ss@h1:5433,h2,[::1]:5435/db?application_name=x");
    expect(list.hosts).toEqual([
      { host: "h1", port: 5433 },
      { host: "h2", port: 5432 },
      { host: "::1", port: 5435 },
    ]);
    expect(list.hosts.map((h) => list.urlFor(h))).toEqual([
      "postgres://u:p%40ss@h1:5433/db?application_name=x",
      "postgres://u:p%40ss@h2:5432/db?application_name=x",
      "postgres://u:p%40ss@[::1]:5435/db?application_name=x",
    ]);
    expect(list.hosts.map(hostName)).toEqual(["h1:5433", "h2:5432", "[::1]:5435"]);
  });

  it("takes a list without user info", () => {
    const list = parseHosts("postgresql://a:1,b:2/db");
    expect(list.urlFor(list.hosts[1]!)).toBe("postgresql://b:2/db");
  });

  it("refuses a malformed list without repeating the string, which holds a password", () => {
    expect(() => parseHosts("postgres://u:hunter2@h1:5433,h2:notaport/db")).toThrow(/host 2 of 2/);
    expect(() => parseHosts("postgres://u:hunter2@h1:5433,,h3/db")).toThrow(expect.objectContaining({ message: expect.not.stringContaining("hunter2") }));
  });
});

// Three hosts, each answering a probe as the test says: a role, a refusal, or never.
type Answer = Role | "refused" | "silent";
const H1: Host = { host: "h1", port: 5433 };
const H2: Host = { host: "h2", port: 5434 };
const H3: Host = { host: "h3", port: 5435 };
const TIMEOUT_MS = 1_000;
const RETRY_MS = 250;

function fakes(answers: Record<string, Answer>) {
  const probed: string[] = [];
  let clock = 0;
  const probe = (h: Host): Promise<Role> => {
    probed.push(h.host);
    const answer = answers[h.host]!;
    if (answer === "silent") return new Promise<Role>(() => undefined);
    if (answer === "refused") return Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    return Promise.resolve(answer);
  };
  const chooser = new PrimaryChooser({ hosts: [H1, H2, H3], probe, timeoutMs: TIMEOUT_MS, retryMs: RETRY_MS, now: () => clock });
  return { chooser, probed, answers, advance: (ms: number) => (clock += ms) };
}

describe("PrimaryChooser", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("finds the primary among standbys, and keeps it without asking again", async () => {
    const { chooser, probed } = fakes({ h1: "standby", h2: "primary", h3: "standby" });
    expect(await chooser.primary()).toBe(H2);
    expect(await chooser.primary()).toBe(H2);
    expect(probed.sort()).toEqual(["h1", "h2", "h3"]);
  });

  it("answers unreachable when every host is a standby", async () => {
    const { chooser } = fakes({ h1: "standby", h2: "standby", h3: "standby" });
    const error = await chooser.primary().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).reason).toMatch(/no primary among .*h1:5433 standby/);
  });

  it("answers unreachable when no host can be reached", async () => {
    const { chooser } = fakes({ h1: "refused", h2: "refused", h3: "refused" });
    const error = await chooser.primary().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).reason).toContain("h3:5435 ECONNREFUSED");
  });

  it("does not wait for a host that does not answer when another is the primary", async () => {
    const { chooser } = fakes({ h1: "silent", h2: "standby", h3: "primary" });
    // No timer is advanced: the answer comes without waiting for h1's time-out.
    expect(await chooser.primary()).toBe(H3);
  });

  it("gives up on a host that does not answer after the time-out, when none other is the primary", async () => {
    const { chooser } = fakes({ h1: "silent", h2: "standby", h3: "refused" });
    let outcome: unknown;
    void chooser.primary().catch((e: unknown) => (outcome = e));
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBeInstanceOf(StoreUnavailable);
    expect((outcome as StoreUnavailable).reason).toContain("h1:5433 no answer");
  });

  it("shares one round among concurrent callers", async () => {
    const { chooser, probed } = fakes({ h1: "standby", h2: "standby", h3: "primary" });
    expect(await Promise.all([chooser.primary(), chooser.primary(), chooser.primary()])).toEqual([H3, H3, H3]);
    expect(probed).toHaveLength(3);
  });

  it("looks again once the primary is forgotten, and finds the new one (a failover)", async () => {
    const { chooser, answers } = fakes({ h1: "primary", h2: "standby", h3: "standby" });
    expect(await chooser.primary()).toBe(H1);
    answers.h1 = "refused";
    answers.h2 = "primary";
    chooser.forget(H1);
    expect(await chooser.primary()).toBe(H2);
  });

  it("forgetting a host that is not the one known changes nothing", async () => {
    const { chooser, probed } = fakes({ h1: "primary", h2: "standby", h3: "standby" });
    await chooser.primary();
    chooser.forget(H2);
    expect(chooser.known).toBe(H1);
    expect(probed).toHaveLength(3);
  });

  it("after a round without a primary, tells callers at once until the retry interval has passed", async () => {
    const { chooser, probed, answers, advance } = fakes({ h1: "standby", h2: "standby", h3: "refused" });
    await expect(chooser.primary()).rejects.toBeInstanceOf(StoreUnavailable);
    advance(RETRY_MS - 1);
    await expect(chooser.primary()).rejects.toBeInstanceOf(StoreUnavailable);
    expect(probed).toHaveLength(3);
    answers.h2 = "primary";
    advance(1);
    expect(await chooser.primary()).toBe(H2);
    expect(probed).toHaveLength(6);
  });

  it("with a single host, answers it without a probe, and never forgets it", async () => {
    const probe = vi.fn<(h: Host) => Promise<Role>>();
    const chooser = new PrimaryChooser({ hosts: [H1], probe, timeoutMs: TIMEOUT_MS, retryMs: RETRY_MS });
    chooser.forget(H1);
    expect(await chooser.primary()).toBe(H1);
    expect(probe).not.toHaveBeenCalled();
  });
});
