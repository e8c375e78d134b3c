import type { Logger } from "pino";
import type { Sealer } from "../domain/seal.ts";
import type { Database } from "../store/database.ts";
import type { Verifier } from "./verifier.ts";

/** What every use case runs with: injected, so tests control the clock and the store. */
export interface Context {
  db: Database;
  sealer: Sealer;
  verifier: Verifier;
  clock: () => Date;
  log: Logger;
}
