import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { redactTokens } from "../logging.ts";

/** The request's id: its X-Request-Id when sane, else a new one; echoed in the answer. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers["x-request-id"];
  const id = typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  res.setHeader("X-Request-Id", id);
  return id;
}

/** Logs the request once it has been answered; tokens in its path appear only as hints. */
export function logWhenAnswered(log: Logger, req: IncomingMessage, res: ServerResponse, reqId: string): void {
  if (!log.isLevelEnabled("info")) return;
  const startedAt = performance.now();
  res.once("finish", () => {
    const ms = Number((performance.now() - startedAt).toFixed(2));
    const path = redactTokens((req.url ?? "").split("?")[0]!);
    log.info({ reqId, method: req.method, path, status: res.statusCode, ms }, "request");
  });
}
