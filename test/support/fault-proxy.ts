// An HTTP proxy between a Kubernetes client (the operator under test) and the API server, which
// counts what passes and injects the faults a real cluster produces now and then: watch streams cut,
// 410 Gone on a watch, 409/500/429 on writes, slow answers.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";

export type WriteVerb = "create" | "update" | "patch" | "delete" | "deletecollection";
export type KubeVerb = "get" | "list" | "watch" | WriteVerb;

/** What a request does, in Kubernetes terms. */
export interface RequestInfo {
  /** A Kubernetes verb; for a non-resource path (/version, /apis) the lower-cased method. */
  verb: string;
  /** "secrets", "apikeys/status", ...; for a non-resource path, the path itself. */
  resource: string;
  namespace?: string;
  name?: string;
}

/** requests[verb][resource] = how many the proxy received. */
export type RequestCounts = Record<string, Record<string, number>>;

interface FaultFilter {
  /** Exact resource, subresource included: "apikeys" does not match "apikeys/status". */
  resource?: string;
  verb?: string;
}

interface Fault {
  applies: (info: RequestInfo) => boolean;
  remaining: number;
  /** Resolves true when it answered the request itself, false to let the request go on. */
  act: (info: RequestInfo, url: URL, req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean>;
}

interface OpenWatch {
  resource: string;
  res: http.ServerResponse;
  upstream: http.ClientRequest;
  answer?: http.IncomingMessage;
}

const hopByHop = new Set([
  "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
  "transfer-encoding", "upgrade", "host", "authorization",
]);

/** Derives the Kubernetes verb and resource from a request line, as the API server's RequestInfo does. */
export function describeRequest(method: string, path: string): RequestInfo {
  const url = new URL(path, "http://proxy.invalid");
  const parts = url.pathname.split("/").filter(Boolean);
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) rest = parts.slice(2);
  else if (parts[0] === "apis" && parts.length >= 4) rest = parts.slice(3);
  else return { verb: method.toLowerCase(), resource: url.pathname };

  let watch = ["1", "t", "true"].includes((url.searchParams.get("watch") ?? "").toLowerCase());
  if (rest[0] === "watch") {
    watch = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length > 2 && rest[2] !== "status" && rest[2] !== "finalize") {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = "", name, subresource] = rest;
  const info: RequestInfo = { verb: "", resource: subresource ? `${resource}/${subresource}` : resource, namespace, name };
  switch (method.toUpperCase()) {
    case "GET":
    case "HEAD":
      info.verb = watch ? "watch" : name ? "get" : "list";
      break;
    case "POST":
      info.verb = "create";
      break;
    case "PUT":
      info.verb = "update";
      break;
    case "PATCH":
      info.verb = "patch";
      break;
    case "DELETE":
      info.verb = name ? "delete" : "deletecollection";
      break;
    default:
      info.verb = method.toLowerCase();
  }
  return info;
}

function isWrite(verb: string): boolean {
  return ["create", "update", "patch", "delete", "deletecollection"].includes(verb);
}

function matches(filter: FaultFilter, info: RequestInfo): boolean {
  return (filter.resource === undefined || filter.resource === info.resource) &&
    (filter.verb === undefined || filter.verb === info.verb);
}

/** A metav1.Status failure, as the API server writes it. */
function statusBody(code: number, reason: string, message: string, details?: object): string {
  return JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, details, code });
}

function expiredBody(url: URL): string {
  const rv = url.searchParams.get("resourceVersion") ?? "0";
  return statusBody(410, "Expired", `too old resource version: ${rv} (fault injected by the test proxy)`);
}

async function drain(req: http.IncomingMessage): Promise<void> {
  for await (const _chunk of req) {
    // the body of a request answered with a fault is not needed
  }
}

export class FaultProxy {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** A KubeConfig whose cluster is this proxy (plain http, no credentials: the proxy adds them). */
  readonly kubeConfig: KubeConfig;
  readonly kubeconfigPath: string;

  readonly #server: http.Server;
  readonly #upstream: KubeConfig;
  readonly #agent: https.Agent;
  readonly #dir: string;
  readonly #watches = new Set<OpenWatch>();
  #faults: Fault[] = [];
  #counts = new Map<string, Map<string, number>>();

  private constructor(server: http.Server, upstream: KubeConfig, dir: string) {
    this.#server = server;
    this.#upstream = upstream;
    this.#dir = dir;
    this.#agent = new https.Agent({ keepAlive: true });
    const { port } = server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}`;
    this.kubeConfig = new KubeConfig();
    this.kubeConfig.loadFromOptions({
      // client-node refuses a plain-http server unless TLS verification is off; there is no TLS here.
      clusters: [{ name: "fault-proxy", server: this.url, skipTLSVerify: true }],
      users: [{ name: "fault-proxy" }],
      contexts: [{ name: "fault-proxy", cluster: "fault-proxy", user: "fault-proxy", namespace: upstream.getContextObject(upstream.getCurrentContext())?.namespace }],
      currentContext: "fault-proxy",
    });
    this.kubeconfigPath = join(dir, "kubeconfig");
  }

  /** Starts a proxy on a free 127.0.0.1 port in front of the cluster `upstream` points at. */
  static async start(upstream: KubeConfig): Promise<FaultProxy> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const dir = await mkdtemp(join(tmpdir(), "keyplane-fault-proxy-"));
    const proxy = new FaultProxy(server, upstream, dir);
    await writeFile(proxy.kubeconfigPath, proxy.kubeConfig.exportConfig(), { mode: 0o600 });
    server.on("request", (req, res) => {
      proxy.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          res.writeHead(502, { "content-type": "application/json" });
          res.end(statusBody(502, "BadGateway", `fault proxy: ${String(err)}`));
        } else {
          res.destroy();
        }
      });
    });
    return proxy;
  }

  /** Ends every open watch stream: "reset" drops the connection, "end" closes the stream cleanly. */
  cutWatches({ resource, mode = "reset" }: { resource?: string; mode?: "reset" | "end" } = {}): number {
    let cut = 0;
    for (const watch of this.#watches) {
      if (resource !== undefined && watch.resource !== resource) continue;
      this.#watches.delete(watch);
      if (mode === "reset") {
        watch.res.destroy();
      } else {
        watch.answer?.unpipe(watch.res);
        watch.res.end();
      }
      watch.upstream.destroy();
      cut++;
    }
    return cut;
  }

  /** How many watch streams are open through the proxy now. */
  openWatches(resource?: string): number {
    return [...this.#watches].filter((w) => resource === undefined || w.resource === resource).length;
  }

  /**
   * Answers the next `times` watch requests with 410 Gone: "status" as an HTTP 410 with a Status
   * body, "event" as a 200 stream holding one ERROR event with the 410 Status, then closed.
   */
  expireWatches({ times = 1, resource, form = "status" }: { times?: number; resource?: string; form?: "status" | "event" } = {}): void {
    this.#faults.push({
      applies: (info) => matches({ resource, verb: "watch" }, info),
      remaining: times,
      act: async (_info, url, req, res) => {
        await drain(req);
        if (form === "status") {
          res.writeHead(410, { "content-type": "application/json" });
          res.end(expiredBody(url));
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(`{"type":"ERROR","object":${expiredBody(url)}}\n`);
        }
        return true;
      },
    });
  }

  /**
   * Answers the next `times` writes (create, update, patch, delete, deletecollection; narrowed by
   * `resource` and `verb`) with 409 Conflict, 500 or 429 (with Retry-After), as the API server would.
   */
  failWrites({ status, times = 1, resource, verb, retryAfterSeconds = 1 }: {
    status: 409 | 500 | 429; times?: number; resource?: string; verb?: WriteVerb; retryAfterSeconds?: number;
  }): void {
    this.#faults.push({
      applies: (info) => isWrite(info.verb) && matches({ resource, verb }, info),
      remaining: times,
      act: async (info, _url, req, res) => {
        await drain(req);
        const details = { name: info.name, kind: info.resource.split("/")[0] };
        const headers: Record<string, string> = { "content-type": "application/json" };
        let body: string;
        if (status === 409) {
          body = statusBody(409, "Conflict", `Operation cannot be fulfilled on ${details.kind} "${info.name ?? ""}": the object has been modified; please apply your changes to the latest version and try again`, details);
        } else if (status === 429) {
          headers["retry-after"] = String(retryAfterSeconds);
          body = statusBody(429, "TooManyRequests", "Too many requests, please try again later.", { ...details, retryAfterSeconds });
        } else {
          body = statusBody(500, "InternalError", "Internal error occurred: fault injected by the test proxy", { ...details, causes: [{ message: "fault injected by the test proxy" }] });
        }
        res.writeHead(status, headers);
        res.end(body);
        return true;
      },
    });
  }

  /** Holds the next `times` matching requests (all, forever, by default) for `ms` before handling them. */
  delayRequests({ ms, times = Infinity, resource, verb }: { ms: number; times?: number; resource?: string; verb?: KubeVerb }): void {
    this.#faults.push({
      applies: (info) => matches({ resource, verb }, info),
      remaining: times,
      act: async () => {
        await sleep(ms);
        return false;
      },
    });
  }

  /** Forgets every fault not yet used up. */
  clearFaults(): void {
    this.#faults = [];
  }

  /** Requests received since start or the last resetCounts(), faulted ones included: counts()[verb][resource]. */
  counts(): RequestCounts {
    const out: RequestCounts = {};
    for (const [verb, byResource] of this.#counts) out[verb] = Object.fromEntries(byResource);
    return out;
  }

  /** Requests received for `verb` (and `resource`, when given). */
  count(verb: string, resource?: string): number {
    const byResource = this.#counts.get(verb);
    if (!byResource) return 0;
    if (resource !== undefined) return byResource.get(resource) ?? 0;
    return [...byResource.values()].reduce((a, b) => a + b, 0);
  }

  resetCounts(): void {
    this.#counts = new Map();
  }

  /** Stops listening, drops every open connection and removes the kubeconfig file. */
  async close(): Promise<void> {
    this.cutWatches();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
    this.#agent.destroy();
    await rm(this.#dir, { recursive: true, force: true });
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    const url = new URL(path, "http://proxy.invalid");
    const info = describeRequest(req.method ?? "GET", path);
    this.#count(info);
    // Faults apply in the order they were added; a delay lets the request go on to the next one.
    for (const fault of [...this.#faults]) {
      if (fault.remaining <= 0 || !fault.applies(info)) continue;
      // Taken before acting, so that two requests arriving together do not both use the last one.
      fault.remaining--;
      if (fault.remaining <= 0) this.#faults = this.#faults.filter((f) => f !== fault);
      if (await fault.act(info, url, req, res)) return;
    }
    if (req.socket.destroyed) return; // the client gave up while the request was delayed
    await this.#forward(info, path, req, res);
  }

  #count(info: RequestInfo): void {
    let byResource = this.#counts.get(info.verb);
    if (!byResource) this.#counts.set(info.verb, (byResource = new Map()));
    byResource.set(info.resource, (byResource.get(info.resource) ?? 0) + 1);
  }

  async #forward(info: RequestInfo, path: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const server = this.#upstream.getCurrentCluster()?.server;
    if (!server) throw new Error("the upstream KubeConfig has no current cluster");
    const target = new URL(server.replace(/\/+$/, "") + path);
    const options: https.RequestOptions = { method: req.method, agent: this.#agent, headers: {} };
    await this.#upstream.applyToHTTPSOptions(options);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [key, value] of Object.entries(req.headers)) {
      if (!hopByHop.has(key) && value !== undefined) headers[key] = value;
    }
    options.headers = { ...headers, ...options.headers };
    const send = target.protocol === "https:" ? https.request : http.request;
    if (target.protocol !== "https:") options.agent = undefined;

    const upstream = send(target, options);
    const watch: OpenWatch | undefined = info.verb === "watch" ? { resource: info.resource, res, upstream } : undefined;
    if (watch) this.#watches.add(watch);
    res.on("close", () => {
      if (watch) this.#watches.delete(watch);
      // The client went away (or the proxy cut the stream) before the answer was complete.
      if (!res.writableFinished) upstream.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      upstream.on("error", (err) => {
        if (!res.headersSent) return reject(err);
        if (!res.writableEnded) res.destroy();
        resolve();
      });
      upstream.on("response", (answer) => {
        if (watch) watch.answer = answer;
        const out: http.OutgoingHttpHeaders = {};
        for (const [key, value] of Object.entries(answer.headers)) {
          if (!hopByHop.has(key) && value !== undefined) out[key] = value;
        }
        res.writeHead(answer.statusCode ?? 502, out);
        // Streams chunk by chunk: every event of a watch reaches the client when the server sends it.
        res.flushHeaders();
        answer.pipe(res);
        answer.on("error", () => {
          if (!res.writableEnded) res.destroy();
        });
        answer.on("end", resolve);
        answer.on("close", resolve);
      });
      req.pipe(upstream);
    });
  }
}
