// reconcile/ of operator/: gather -> plan -> apply for one ApiKey, and the key store it reads and changes
// (through services/ keys and directory). It may use domain/, resource/, rotation/ and kube/.
//
// reconcile: gather -> plan -> apply for one ApiKey, until its plan settles. Level-based: it looks at
// how things are, never at what event brought it here, so running it again is always safe.
import { AppError } from "../../domain/errors.ts";
import { ActionFailed, apply, type ApplyDeps } from "./apply.ts";
import { gather, type GatherDeps, type GatherOptions } from "./gather.ts";
import { apiStatusCode } from "../kube/kube-api.ts";
import { formatRef, type ObjectRef } from "../resource/object-ref.ts";
import { failurePlan, plan, type PlanInput } from "./plan.ts";
import type { ProcessResult } from "../kube/queue.ts";

export type ReconcilerDeps = GatherDeps & ApplyDeps;

/**
 * Passes before giving up for a backoff: a key change, a stale read answered 409, then the final
 * writes take three; more means something keeps moving under our feet.
 */
const MAX_PASSES = 5;

export async function reconcile(deps: ReconcilerDeps, ref: ObjectRef): Promise<ProcessResult> {
  let known: GatherOptions["known"];
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    // After a pass that wrote something, the informers may not have caught up: read the source, or
    // take what the server's own answers to that pass said.
    const input = await gather(deps, ref, { fresh: pass > 0, known });
    if (!input) return "done";
    const { actions, next, requeueAt } = plan(input);
    known = undefined;
    try {
      const applied = await apply(deps, input.apiKey, actions);
      // A Secret absent in this pass's input was read from the server (a cached one is never absent).
      const secretName = input.spec.ok ? input.spec.spec.secret.name : undefined;
      known = { apiKey: applied.apiKey, secretAbsent: !input.secret && !applied.wroteSecret ? secretName : undefined };
    } catch (error) {
      if (error instanceof ActionFailed && isStaleRead(error.cause)) {
        deps.log.debug({ apiKey: formatRef(ref), action: error.action.type }, "stale read: looking again");
        continue;
      }
      if (error instanceof ActionFailed && error.action.type !== "patchStatus" && !input.apiKey.metadata.deletionTimestamp) {
        await reportFailure(deps, input, error);
      }
      throw error;
    }
    if (next === "done" && requeueAt) return { requeueAfterMs: requeueAt.getTime() - deps.clock().getTime() };
    if (next !== "replan") return next;
  }
  deps.log.info({ apiKey: formatRef(ref) }, "not settled after several passes; retrying after a backoff");
  return "retry";
}

/** A write that lost to a concurrent one, or found its object changed: gather again and replan. */
function isStaleRead(error: unknown): boolean {
  if (apiStatusCode(error) === 409) return true;
  return error instanceof AppError && (error.code === "conflict" || error.code === "not_found");
}

/** Shows the failure as Ready=False, reason Error (best effort: the API may be what fails). */
async function reportFailure(deps: ReconcilerDeps, input: PlanInput, error: ActionFailed): Promise<void> {
  try {
    await apply(deps, input.apiKey, failurePlan(input, error.message).actions);
  } catch {
    // The error itself is logged and retried by the queue.
  }
}
