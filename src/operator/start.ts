import type { Logger } from "pino";
import type { Context } from "../services/context.ts";

export interface RunningOperator {
  stop(): Promise<void>;
}

/** Starts the ApiKey operator as KEYPLANE_OPERATOR says: on, off, or auto (on where a cluster is reachable). */
export async function startOperator(mode: "on" | "off" | "auto", _ctx: Context, log: Logger): Promise<RunningOperator | undefined> {
  if (mode === "off") return undefined;
  log.info({ mode }, "operator not built into this version yet");
  return undefined;
}
