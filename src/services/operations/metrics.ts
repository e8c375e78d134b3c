import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { KeyAction } from "../../domain/keys/key-event.ts";
import { KEY_ACTIONS, type ScannerName } from "../../domain/keys/key-event.ts";
import type { LeakLabel } from "../../domain/leaks/leak-report.ts";
import { LEAK_POLICIES, type LeakPolicy } from "../../domain/policy/policy.ts";
import type { AuthEndpoint, AuthOutcome } from "../../domain/keys/auth-outcome.ts";
import type { KeyCacheStats } from "../verification/key-cache.ts";
import type { MeterStats } from "../policy/policy-meter.ts";
import type { SendResult } from "../webhooks/webhook-sender.ts";
import { RequestDurations, type DurationSeries } from "./request-durations.ts";

// The process's Prometheus metrics (docs/operations.md, "Metrics"), in a registry of its own so that
// several instances in one process stay apart. No label holds a token, a customer's or key's name, or
// a raw path: routes are patterns, methods outside a fixed list are "other". On the hot path counting
// is adding one to a plain number, published when Prometheus scrapes (a prom-client series hashes its
// labels on every increment); request durations likewise (request-durations.ts).
const ENDPOINTS: readonly AuthEndpoint[] = ["rest", "verify", "auth"];
const OUTCOMES: readonly AuthOutcome[] = ["valid", "malformed", "unknown", "disabled", "expired", "forbidden", "throttled"];
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
export const CONDITIONS = ["Ready", "Reconciling", "Stalled"] as const;
export type ReconcileResult = "success" | "error" | "requeue";
/** What key policy decided of a request that a policy binds (docs/api.md, "Key policy"). */
export type PolicyDecision = "admitted" | "restricted" | "rate_limited" | "usage_exceeded" | "unavailable";
const DECISIONS: readonly PolicyDecision[] = ["admitted", "restricted", "rate_limited", "usage_exceeded", "unavailable"];
const SEND_RESULTS: readonly SendResult[] = ["delivered", "retrying", "failed", "deactivated"];

/** What the metrics read at scrape time rather than count as they happen. */
export interface MetricsSources {
  keyCache(): KeyCacheStats;
  databaseUp(): Promise<boolean>;
  /** Key policy's leases (absent where nothing meters: every figure 0). */
  meter?(): MeterStats;
  /** The webhook outbox: deliveries pending, and how long the oldest has waited (absent: every figure 0). */
  webhookQueue?(): Promise<{ pending: number; oldestSeconds: number }>;
  /** The webhook sender thread's heap, bytes (absent: the sender runs on the serving thread, 0). */
  webhookHeap?(): Promise<number>;
}

type Inc = { inc(n?: number): void };
/** An answer's series: its count and its durations, made on its first request and kept. */
type RequestSeries = { labels: { method: string; route: string; status: string }; count: number; duration: DurationSeries };

export class Metrics {
  readonly registry = new Registry();
  readonly #authentications = Object.fromEntries(ENDPOINTS.map((e) => [e, Object.fromEntries(OUTCOMES.map((o) => [o, 0]))])) as Record<AuthEndpoint, Record<AuthOutcome, number>>;
  readonly #keyEvents = new Map<KeyAction, Inc>();
  readonly #decisions = Object.fromEntries(DECISIONS.map((d) => [d, 0])) as Record<PolicyDecision, number>;
  readonly #webhookSends = Object.fromEntries(SEND_RESULTS.map((r) => [r, 0])) as Record<SendResult, number>;
  /** By route, then method, then status: no label strings are built per request. */
  readonly #requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();
  readonly #durations = new RequestDurations();
  readonly #reconciles: Counter<"result">;
  readonly #reconcileDurations: Histogram;
  readonly #ready: Gauge<"namespace" | "name" | "condition">;
  readonly #leader: Gauge;
  readonly #leakReports: Counter<"scanner" | "label">;
  readonly #leakActions: Counter<"policy">;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const requestSeries = this.#requestSeries;
    new Counter({ name: "keyplane_http_requests_total", help: "HTTP requests answered", labelNames: ["method", "route", "status"], registers,
      collect() {
        this.reset();
        for (const byMethod of requestSeries.values()) for (const byStatus of byMethod.values()) for (const s of byStatus.values()) this.inc(s.labels, s.count);
      } });
    this.registry.registerMetric(this.#durations.asMetric());
    const authentications = this.#authentications;
    new Counter({ name: "keyplane_authentications_total", help: "Keys presented, by endpoint and what they turned out to be", labelNames: ["endpoint", "result"], registers,
      collect() {
        this.reset();
        for (const endpoint of ENDPOINTS) for (const result of OUTCOMES) this.inc({ endpoint, result }, authentications[endpoint][result]);
      } });
    const keyEvents = new Counter({ name: "keyplane_key_events_total", help: "Key changes recorded by this process", labelNames: ["action"], registers });
    for (const action of KEY_ACTIONS) this.#keyEvents.set(action, keyEvents.labels(action));
    // The key cache counts for itself (no cost on the hot path); its counts are read at scrape time.
    new Counter({ name: "keyplane_key_cache_requests_total", help: "Verification cache look-ups, by result", labelNames: ["result"], registers,
      collect() {
        const stats = sources.keyCache();
        this.reset();
        this.labels("hit").inc(stats.hits);
        this.labels("miss").inc(stats.misses);
      } });
    new Gauge({ name: "keyplane_key_cache_entries", help: "Keys and unknown tokens in the verification cache", registers,
      collect() { this.set(sources.keyCache().size); } });
    new Gauge({ name: "keyplane_database_up", help: "1 while the database answers and is migrated, else 0", registers,
      async collect() { this.set((await sources.databaseUp()) ? 1 : 0); } });
    this.#policyMetrics(sources);
    this.#reconciles = new Counter({ name: "keyplane_apikey_reconciles_total", help: "ApiKey reconciles, by result", labelNames: ["result"], registers });
    this.#reconcileDurations = new Histogram({ name: "keyplane_apikey_reconcile_duration_seconds", help: "Time per ApiKey reconcile", registers });
    this.#ready = new Gauge({ name: "keyplane_apikey_ready_status", help: "1 while the ApiKey's condition is True, else 0", labelNames: ["namespace", "name", "condition"], registers });
    this.#leader = new Gauge({ name: "keyplane_operator_leader", help: "1 while this replica holds the operator's Lease", registers });
    this.#leader.set(0);
    // Leak reports (docs/leaks.md): a true positive is a key of ours in public; each live one is acted on once.
    this.#leakReports = new Counter({ name: "keyplane_leak_reports_total", help: "Tokens reported leaked, by scanner (github, admin) and label", labelNames: ["scanner", "label"], registers });
    this.#leakActions = new Counter({ name: "keyplane_leak_actions_total", help: "Live keys a leak report acted on, by the leak policy that acted", labelNames: ["policy"], registers });
    for (const scanner of ["github", "admin"] as const) for (const label of ["true_positive", "false_positive"] as const) this.#leakReports.labels(scanner, label);
    for (const policy of LEAK_POLICIES) this.#leakActions.labels(policy);
    this.#webhookMetrics(sources);
  }

  /**
   * Webhooks (docs/webhooks.md): attempts by how they ended, counted as they happen; the outbox's depth
   * and its oldest message's age read from the database at scrape time (an outbox that grows, or a
   * message that waits, is what to alert on).
   */
  #webhookMetrics(sources: MetricsSources): void {
    const registers = [this.registry];
    const sent = this.#webhookSends;
    new Counter({ name: "keyplane_webhook_deliveries_total", help: "Webhook delivery attempts made by this process, by result (delivered; retrying: failed, tried again later; failed: no attempt left; deactivated: the receiver answered 410)", labelNames: ["result"], registers,
      collect() {
        this.reset();
        for (const result of SEND_RESULTS) this.inc({ result }, sent[result]);
      } });
    // One read of the outbox serves both gauges of a scrape: the first collected makes it, the second uses it up.
    const none = { pending: 0, oldestSeconds: 0 };
    let read: Promise<{ pending: number; oldestSeconds: number }> | undefined;
    const first = () => (read = sources.webhookQueue?.() ?? Promise.resolve(none));
    const second = () => {
      const r = read ?? first();
      read = undefined;
      return r;
    };
    new Gauge({ name: "keyplane_webhook_queue_depth", help: "Webhook deliveries not yet delivered nor failed, on every process", registers,
      async collect() { this.set((await first()).pending); } });
    // Its own isolate: prom-client's nodejs_heap_* read the serving thread's alone (docs/scaling.md, "Memory").
    new Gauge({ name: "keyplane_webhook_thread_heap_bytes", help: "The V8 heap of the thread that sends webhooks, committed; 0 when the sender runs on the serving thread", registers,
      async collect() { this.set((await sources.webhookHeap?.()) ?? 0); } });
    new Gauge({ name: "keyplane_webhook_oldest_pending_seconds", help: "Age of the oldest webhook delivery not yet delivered nor failed; 0 when none is", registers,
      async collect() { this.set((await second()).oldestSeconds); } });
  }

  webhookSent(result: SendResult, count = 1): void {
    this.#webhookSends[result] += count;
  }

  authentication(endpoint: AuthEndpoint, result: AuthOutcome): void {
    this.#authentications[endpoint][result]++;
  }

  /**
   * Key policy's figures, counted by the meter and read at scrape time: what operators alert on is a
   * growing share of refusals, leases the database could not grant (windows full, balances empty) and
   * grants that fail (the database out of reach: 503s). No label names a key or an entity.
   */
  #policyMetrics(sources: MetricsSources): void {
    const registers = [this.registry];
    const none: MeterStats = { grants: { window: { taken: 0, short: 0, failed: 0 }, balance: { taken: 0, short: 0, failed: 0 } }, returned: 0, held: { window: 0, balance: 0 }, counters: 0 };
    const meter = () => sources.meter?.() ?? none;
    const decisions = this.#decisions;
    new Counter({ name: "keyplane_policy_decisions_total", help: "Requests bound by a key policy, by what it decided", labelNames: ["result"], registers,
      collect() {
        this.reset();
        for (const result of DECISIONS) this.inc({ result }, decisions[result]);
      } });
    new Counter({ name: "keyplane_policy_leases_total", help: "Leases of rate-limit windows and credit balances asked of the database, by result (taken, short: fewer left than asked, failed)", labelNames: ["kind", "result"], registers,
      collect() {
        const { grants } = meter();
        this.reset();
        for (const kind of ["window", "balance"] as const) for (const result of ["taken", "short", "failed"] as const) this.inc({ kind, result }, grants[kind][result]);
      } });
    new Gauge({ name: "keyplane_policy_units_held", help: "Units of rate-limit windows and credit balances this process holds unspent", labelNames: ["kind"], registers,
      collect() {
        const { held } = meter();
        this.set({ kind: "window" }, held.window);
        this.set({ kind: "balance" }, held.balance);
      } });
    new Counter({ name: "keyplane_policy_credits_returned_total", help: "Unspent credits this process gave back to their balances", registers,
      collect() {
        this.reset();
        this.inc(meter().returned);
      } });
  }

  policyDecision(result: PolicyDecision): void {
    this.#decisions[result]++;
  }

  leakReport(scanner: ScannerName, label: LeakLabel): void {
    this.#leakReports.labels(scanner, label).inc();
  }

  leakAction(policy: LeakPolicy): void {
    this.#leakActions.labels(policy).inc();
  }

  keyEvents(action: KeyAction, count = 1): void {
    if (count > 0) this.#keyEvents.get(action)!.inc(count);
  }

  /** An answered request, by its route's pattern ("unmatched" for none). */
  request(method: string | undefined, route: string, status: number, seconds: number): void {
    const m = method && METHODS.has(method) ? method : "other";
    let byMethod = this.#requestSeries.get(route);
    if (!byMethod) this.#requestSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(m);
    if (!byStatus) byMethod.set(m, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) byStatus.set(status, (series = { labels: { method: m, route, status: String(status) }, count: 0, duration: this.#durations.series(m, route) }));
    series.count++;
    this.#durations.observe(series.duration, seconds);
  }

  reconciled(result: ReconcileResult, seconds: number): void {
    this.#reconciles.labels(result).inc();
    this.#reconcileDurations.observe(seconds);
  }

  /** An ApiKey's conditions as last seen: 1 for each True, else 0; undefined (the ApiKey gone) removes its series. */
  readyStatus(namespace: string, name: string, conditions: readonly { type: string; status: string }[] | undefined): void {
    for (const condition of CONDITIONS) {
      if (!conditions) this.#ready.remove(namespace, name, condition);
      else this.#ready.labels(namespace, name, condition).set(conditions.some((c) => c.type === condition && c.status === "True") ? 1 : 0);
    }
  }

  /** No ApiKey's status is known here any more (leadership lost). */
  forgetReadyStatus(): void {
    this.#ready.reset();
  }

  leader(leading: boolean): void {
    this.#leader.set(leading ? 1 : 0);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
