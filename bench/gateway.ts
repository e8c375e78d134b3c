import type autocannon from "autocannon";
import { freePort as nginxPort, nginxMissing, shippedConfig, startNginx } from "../test/support/nginx.ts";
import { countDetail, countFigures, countTransactions, type BenchDatabase } from "./database.ts";
import { load } from "./load.ts";
import { startBare, type Server } from "./processes.ts";
import { each, inTurn, median, round, roundsDetail, type RoundsTools } from "./rounds.ts";

// The gateway phase (bench/README.md): /auth and POST /verify with a valid key on a customer path
// (names to resolve), each against a bare node:http server in the same run, with the database's
// transactions per request after warm-up; then a real nginx in front of a bare upstream, without and
// with auth_request to keyplane (the shipped deploy/nginx/keyplane.conf).

export interface GatewayFigures {
  authVsBare: number;
  authP50Ms: number;
  authP99Ms: number;
  authQueriesPerRequest: number;
  verifyVsBare: number;
  verifyP50Ms: number;
  verifyP99Ms: number;
  verifyQueriesPerRequest: number;
  nginxAuthVsPlain: number;
}

export async function gatewayPhase(t: RoundsTools, a: Server, db: BenchDatabase, fixture: { customer: string; token: string }): Promise<{ figures: GatewayFigures; details: Record<string, string>; transactions: Record<"auth" | "verify", ReturnType<typeof countFigures>> }> {
  const path = `/customers/${fixture.customer}/invoices`;
  const auth: autocannon.Request[] = [{ method: "GET", path: "/auth", headers: { authorization: `Bearer ${fixture.token}`, "x-original-method": "GET", "x-original-uri": path } }];
  const verify: autocannon.Request[] = [{ method: "POST", path: "/verify", headers: { "content-type": "application/json" }, body: JSON.stringify({ key: fixture.token, path }) }];
  const run = (url: string, requests: autocannon.Request[], duration = t.seconds) => load({ url, connections: t.connections, duration, requests });
  // Each endpoint against a bare server given the same requests: for /auth one answering "{}", for
  // /verify one reading the body and answering the very bytes of keyplane's verdict (as GET
  // /keys/self's baseline answers that route's bytes).
  const verdictBody = await (await fetch(`${a.url}/verify`, { method: "POST", headers: verify[0]!.headers, body: verify[0]!.body as string })).text();
  const bare = await startBare("{}");
  const bareVerify = await startBare(verdictBody);
  const details: Record<string, string> = {};
  try {
    t.say(`gateway: warm-up ${t.warmupSeconds} s each on bare node:http, /auth and /verify`);
    await run(bare.url, auth, t.warmupSeconds);
    await run(bareVerify.url, verify, t.warmupSeconds);
    await run(a.url, auth, t.warmupSeconds);
    await run(a.url, verify, t.warmupSeconds);
    const againstBare = async (name: string, baseline: Server, requests: autocannon.Request[]) => {
      const seconds = t.seconds / 2;
      t.say(`gateway: ${name} and bare node:http in turn, ${t.rounds} rounds of ${seconds} s each, ${t.connections} connections`);
      // The database's transactions are counted over all of it: the baseline never asks it anything.
      const counted = await countTransactions(db, t.settle, () =>
        inTurn(
          t.rounds,
          (i) => t.metered(`${name}: bare node:http ${i}`, [baseline], () => run(baseline.url, requests, seconds)),
          (i) => t.metered(`${name} ${i}`, [a], () => run(a.url, requests, seconds)),
        ),
      );
      const { baselines, subjects: endpoints, ratios } = counted.result;
      for (const result of baselines) t.expectAnswers(`${name}: bare`, result, ["200"]);
      for (const result of endpoints) t.expectAnswers(name, result, ["200"]);
      const requestCount = endpoints.reduce((n, e) => n + e.requests, 0);
      return {
        ...counted,
        requests: requestCount,
        vsBare: median(ratios),
        p50: median(endpoints.map((e) => e.latency.p50)),
        p99: median(endpoints.map((e) => e.latency.p99)),
        queriesPerRequest: counted.queries / requestCount,
        detail: roundsDetail(counted.result),
        // The bare server's own p99 beside keyplane's: on a shared machine the tail is partly the machine's.
        p99Detail: `rounds ${each(endpoints.map((e) => e.latency.p99))} ms; bare node:http ${each(baselines.map((b) => b.latency.p99))} ms`,
      };
    };
    const authRun = await againstBare("GET /auth", bare, auth);
    const verifyRun = await againstBare("POST /verify", bareVerify, verify);
    details.authVsBare = authRun.detail;
    details.verifyVsBare = `${verifyRun.detail} (the bare server reading the body and answering the same ${Buffer.byteLength(verdictBody)} bytes)`;
    const counted = (run: typeof authRun) => `${Number(run.queries.toFixed(1))} over ${run.requests} requests (${countDetail(run)})`;
    details.authP99Ms = authRun.p99Detail;
    details.verifyP99Ms = verifyRun.p99Detail;
    details.authQueriesPerRequest = counted(authRun);
    details.verifyQueriesPerRequest = counted(verifyRun);

    const nginx = await nginxRatio(t, a, bare, path, fixture.token, details);
    return {
      figures: {
        authVsBare: round(authRun.vsBare),
        authP50Ms: round(authRun.p50),
        authP99Ms: round(authRun.p99),
        authQueriesPerRequest: round(authRun.queriesPerRequest, 4),
        verifyVsBare: round(verifyRun.vsBare),
        verifyP50Ms: round(verifyRun.p50),
        verifyP99Ms: round(verifyRun.p99),
        verifyQueriesPerRequest: round(verifyRun.queriesPerRequest, 4),
        nginxAuthVsPlain: nginx,
      },
      details,
      transactions: { auth: countFigures(authRun), verify: countFigures(verifyRun) },
    };
  } finally {
    await Promise.all([bare.stop(), bareVerify.stop()]);
  }
}

/** nginx in front of the bare server: throughput with auth_request to keyplane ÷ throughput without. */
async function nginxRatio(t: RoundsTools, a: Server, bare: Server, path: string, token: string, details: Record<string, string>): Promise<number> {
  const missing = nginxMissing();
  if (missing) {
    t.problem(`gateway: ${missing}`);
    return NaN;
  }
  const [plainPort, authPort] = [await nginxPort(), await nginxPort()];
  const bareHost = new URL(bare.url).host;
  const gated = await shippedConfig({ listen: authPort, keyplane: new URL(a.url).host, api: bareHost });
  // The plain server keeps as many idle connections to the bare server as the shipped one does.
  const keepalive = /keepalive (\d+);/.exec(gated)![1];
  const plain = `server {\n  listen 127.0.0.1:${plainPort};\n  location / {\n    proxy_http_version 1.1;\n    proxy_set_header Connection "";\n    proxy_pass http://plain_api;\n  }\n}\nupstream plain_api {\n  server ${bareHost};\n  keepalive ${keepalive};\n}\n`;
  const nginx = await startNginx(plain + gated, authPort);
  try {
    const requests: autocannon.Request[] = [{ method: "GET", path, headers: { authorization: `Bearer ${token}` } }];
    const plainUrl = `http://127.0.0.1:${plainPort}`;
    const seconds = t.seconds / 2;
    t.say(`gateway: nginx in front of bare node:http, without and with auth_request to keyplane in turn, ${t.rounds} rounds of ${seconds} s each`);
    await load({ url: plainUrl, connections: t.connections, duration: t.warmupSeconds, requests });
    await load({ url: nginx.url, connections: t.connections, duration: t.warmupSeconds, requests });
    // nginx's own CPU is the runs' work, not a disturbance.
    const ngx = nginx.pids().map((pid, i) => ({ name: i === 0 ? "nginx" : `nginx worker ${i}`, pid }));
    const rounds = await inTurn(
      t.rounds,
      (i) => t.metered(`nginx without auth_request ${i}`, [bare, ...ngx], () => load({ url: plainUrl, connections: t.connections, duration: seconds, requests })),
      (i) => t.metered(`nginx with auth_request ${i}`, [a, bare, ...ngx], () => load({ url: nginx.url, connections: t.connections, duration: seconds, requests })),
    );
    for (const result of rounds.baselines) t.expectAnswers("nginx without auth_request", result, ["200"]);
    for (const result of rounds.subjects) t.expectAnswers("nginx with auth_request", result, ["200"]);
    details.nginxAuthVsPlain = `${roundsDetail(rounds)}; p99 ${each(rounds.subjects.map((r) => r.latency.p99))} vs ${each(rounds.baselines.map((r) => r.latency.p99))} ms`;
    return round(median(rounds.ratios));
  } finally {
    await nginx.stop();
  }
}
