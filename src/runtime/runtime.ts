import { AppError } from "../domain/errors.ts";
import { RUNTIME } from "../domain/keys/key-event.ts";
import type { Key, Application } from "../domain/model.ts";
import { applicationScope } from "../domain/scope/scope.ts";
import type { Logger } from "pino";
import type { KeysNeeds } from "../services/keys/needs.ts";
import { provisionKey } from "../services/keys/keys.ts";

// The voice-application runtime (docs/api.md, "Runtime"): when the platform runs an application it
// provisions the application's runtime key and hands it over in a request header.
export const RUNTIME_KEY_NAME = "runtime";

export interface RuntimeOptions {
  /** The header that carries the runtime key (KEYPLANE_RUNTIME_HEADER). */
  header: string;
  /** How long the application may take to answer (10 s; tests make it short). */
  timeoutMs: number;
}

export const INVOKE_TIMEOUT_MS = 10_000;

export async function runtimeKey(ctx: KeysNeeds & { log: Logger }, app: Application): Promise<Key> {
  const scope = applicationScope(app.tenantId, app.domainId, app.id);
  return (await provisionKey(ctx, scope, { name: RUNTIME_KEY_NAME }, RUNTIME)).key;
}

export interface Answer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

/**
 * Runs the application: sends `body` (JSON) to its url with its method and the runtime key in the
 * header of `options`, and returns the application's answer as it is. A GET carries no body.
 */
export async function invoke(ctx: KeysNeeds & { log: Logger }, app: Application, body: unknown, options: RuntimeOptions): Promise<Answer> {
  if (!app.url) throw new AppError("bad_gateway", "The application has no url to invoke.");
  const key = await runtimeKey(ctx, app);
  let response: Response;
  try {
    response = await fetch(app.url, {
      method: app.method,
      headers: { [options.header]: key.keyId, ...(app.method === "POST" ? { "content-type": "application/json" } : {}) },
      body: app.method === "POST" ? JSON.stringify(body ?? null) : undefined,
      signal: AbortSignal.timeout(options.timeoutMs),
      redirect: "manual",
    });
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? undefined,
      body: Buffer.from(await response.arrayBuffer()),
    };
  } catch (error) {
    const timedOut = (error as Error).name === "TimeoutError";
    ctx.log.warn({ application: app.id, reason: (error as Error).name }, "application invoke failed");
    throw new AppError("bad_gateway", timedOut ? `The application did not answer within ${options.timeoutMs / 1000} s.` : "The application could not be reached.");
  }
}
