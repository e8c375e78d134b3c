import type { IncomingMessage, ServerResponse } from "node:http";
import type { Metrics } from "../../services/operations/metrics.ts";
import { sendError } from "../errors.ts";

// The handler of the metrics port (KEYPLANE_METRICS_PORT, docs/operations.md "Metrics"): GET /metrics
// in Prometheus's text format, without authentication; anything else is a 404 with the JSON body.
export function metricsHandler(metrics: Metrics): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = req.url?.split("?", 1)[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      sendError(res, "not_found", "Only GET /metrics is served on this port.");
      return;
    }
    metrics.text().then(
      (text) => {
        res.writeHead(200, { "Content-Type": metrics.registry.contentType });
        res.end(req.method === "HEAD" ? undefined : text);
      },
      () => sendError(res, "internal", "The metrics could not be gathered."),
    );
  };
}
