// GET /metrics (docs/operations.md, "Metrics"): every metric the operations guide lists, with its type
// and labels, after traffic; served on KEYPLANE_METRICS_PORT only, never on the API's port.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricsHandler } from "../../src/http/operations/metrics-server.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { backends } from "../support/databases.ts";
import { startServerProcess } from "../support/process.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

/** Each sample of a Prometheus text exposition: name, labels, value; and each metric's TYPE. */
export function parseExposition(text: string): { types: Map<string, string>; samples: { name: string; labels: Record<string, string>; value: number }[] } {
  const types = new Map<string, string>();
  const samples: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = JSON.parse(`"${l[2]}"`) as string;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

const EXPECTED: [string, string, string[]][] = [
  ["keyplane_http_requests_total", "counter", ["method", "route", "status"]],
  ["keyplane_http_request_duration_seconds", "histogram", ["method", "route"]],
  ["keyplane_authentications_total", "counter", ["endpoint", "result"]],
  ["keyplane_key_cache_requests_total", "counter", ["result"]],
  ["keyplane_key_cache_entries", "gauge", []],
  ["keyplane_database_up", "gauge", []],
  ["keyplane_key_events_total", "counter", ["action"]],
  ["keyplane_apikey_reconciles_total", "counter", ["result"]],
  ["keyplane_apikey_reconcile_duration_seconds", "histogram", []],
  ["keyplane_apikey_ready_status", "gauge", ["namespace", "name", "condition"]],
  ["keyplane_operator_leader", "gauge", []],
  ["keyplane_webhook_deliveries_total", "counter", ["result"]],
  ["keyplane_webhook_queue_depth", "gauge", []],
  ["keyplane_webhook_oldest_pending_seconds", "gauge", []],
  ["keyplane_webhook_thread_heap_bytes", "gauge", []],
  ["keyplane_analytics_rows_written_total", "counter", []],
  ["keyplane_analytics_write_duration_seconds", "histogram", []],
  ["keyplane_analytics_write_failures_total", "counter", []],
  ["keyplane_analytics_pending_rows", "gauge", []],
];

describe.each(backends())("GET /metrics on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let port: Listening;
  const scrape = async () => {
    const res = await fetch(`${port.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(await res.text());
  };
  const value = (samples: Awaited<ReturnType<typeof scrape>>["samples"], name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);

  beforeAll(async () => {
    svc = await startService(backend, { metrics: true });
    acme = await createTenant(svc, "acme");
    port = await listen(metricsHandler(svc.metrics!), 0, "127.0.0.1");
  });
  afterAll(async () => {
    await port?.close();
    await svc?.stop();
  });

  it("lists every metric with its type and labels after traffic, and Node's default metrics", async () => {
    const before = (await scrape()).samples;
    await svc.as(acme.keys.domain).get("/keys/self").expect(200); // the key is cached by createTenant: a hit
    await svc.as("XI" + "F".repeat(32)).get("/keys/self").expect(401);
    await svc.as("not-a-key").get("/keys/self").expect(401);
    await svc.as("").post("/verify").set("Authorization", "").send({ key: acme.keys.application }).expect(200);
    await svc.as(acme.keys.customer).post(`/customers/acme/keys`, { name: "metered" }).expect(200);
    expect(value((await scrape()).samples, "keyplane_analytics_pending_rows")).toBe(1);
    await svc.analytics.write();
    const { types, samples } = await scrape();

    for (const [name, type, labels] of EXPECTED) {
      expect(types.get(name), name).toBe(type);
      for (const s of samples.filter((x) => x.name === name || x.name.startsWith(`${name}_`))) {
        expect(Object.keys(s.labels).filter((l) => l !== "le").sort(), name).toEqual([...labels].sort());
      }
    }
    expect(value(samples, "keyplane_http_requests_total", { method: "GET", route: "/keys/self", status: "200" })).toBeGreaterThan(value(before, "keyplane_http_requests_total", { method: "GET", route: "/keys/self", status: "200" }));
    expect(value(samples, "keyplane_http_requests_total", { method: "POST", route: "/customers/:customer/keys", status: "200" })).toBeGreaterThan(0);
    expect(value(samples, "keyplane_http_request_duration_seconds_count", { route: "/verify" })).toBe(1);
    expect(value(samples, "keyplane_authentications_total", { endpoint: "rest", result: "valid" })).toBeGreaterThan(value(before, "keyplane_authentications_total", { endpoint: "rest", result: "valid" }));
    expect(value(samples, "keyplane_authentications_total", { endpoint: "rest", result: "unknown" }) - value(before, "keyplane_authentications_total", { endpoint: "rest", result: "unknown" })).toBe(1);
    expect(value(samples, "keyplane_authentications_total", { endpoint: "rest", result: "malformed" }) - value(before, "keyplane_authentications_total", { endpoint: "rest", result: "malformed" })).toBe(1);
    expect(value(samples, "keyplane_authentications_total", { endpoint: "verify", result: "valid" })).toBe(1);
    expect(value(samples, "keyplane_key_cache_requests_total", { result: "hit" })).toBeGreaterThan(value(before, "keyplane_key_cache_requests_total", { result: "hit" }));
    expect(value(samples, "keyplane_key_cache_requests_total", { result: "miss" })).toBeGreaterThan(value(before, "keyplane_key_cache_requests_total", { result: "miss" }));
    expect(value(samples, "keyplane_key_cache_entries")).toBe(svc.ctx.keyCache.stats().size);
    expect(value(samples, "keyplane_database_up")).toBe(1);
    expect(value(samples, "keyplane_key_events_total", { action: "created" }) - value(before, "keyplane_key_events_total", { action: "created" })).toBe(1);
    expect(value(samples, "keyplane_operator_leader")).toBe(0);
    expect(value(samples, "keyplane_analytics_rows_written_total")).toBe(1);
    expect(value(samples, "keyplane_analytics_write_duration_seconds_count")).toBe(1);
    expect(value(samples, "keyplane_analytics_pending_rows")).toBe(0);
    expect(types.get("process_cpu_user_seconds_total")).toBe("counter");
    expect(types.get("nodejs_eventloop_lag_seconds")).toBe("gauge");
  });

  it("labels a request that matches no route, and a method outside the list, by fixed words", async () => {
    await svc.as(acme.keys.customer).get(`/no/such/${acme.keys.customer}`).expect(404);
    const api = await listen(svc.app, 0, "127.0.0.1");
    try {
      await fetch(`${api.url}/keys/self`, { method: "PROPFIND" });
    } finally {
      await api.close();
    }
    const { samples } = await scrape();
    expect(value(samples, "keyplane_http_requests_total", { method: "other" })).toBe(1);
    expect(samples.some((s) => s.labels.method === "PROPFIND")).toBe(false);
    expect(value(samples, "keyplane_http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThan(0);
    expect(samples.some((s) => Object.values(s.labels).some((v) => v.includes("/no/such")))).toBe(false);
  });

  it("answers only GET /metrics on its port, with the JSON error body otherwise", async () => {
    const res = await fetch(`${port.url}/keys/self`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ status: 404, error: "not_found" });
  });
});

describe("keyplane serve", () => {
  it("serves /metrics on KEYPLANE_METRICS_PORT only, and nowhere without it", async () => {
    const env = { KEYPLANE_DATA_DIR: `${process.env.TMPDIR ?? "/tmp"}/keyplane-metrics-${process.pid}`, LOG_LEVEL: "info" };
    const withMetrics = await startServerProcess({ ...env, KEYPLANE_METRICS_PORT: "0" });
    try {
      const line = withMetrics.stdout().split("\n").find((l) => l.includes('"keyplane serving"'))!;
      const metricsUrl = (JSON.parse(line) as { metrics: string }).metrics;
      const scraped = await fetch(`${metricsUrl}/metrics`);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain("# TYPE keyplane_http_requests_total counter");
      expect((await fetch(`${withMetrics.url}/metrics`)).status).toBe(404);
    } finally {
      await withMetrics.stop();
    }
    const without = await startServerProcess(env);
    try {
      expect(without.stdout()).not.toContain('"metrics":');
      expect((await fetch(`${without.url}/metrics`)).status).toBe(404);
    } finally {
      await without.stop();
    }
  });
});
