// apply: carries out a plan's actions in order, recording each action's event once it succeeded (and
// did something: one that found its work done already records none). The first failure stops it: the
// reconciler decides what then.
import type { Logger } from "pino";
import { describeAction, type Action } from "./actions.ts";
import { FINALIZER, type ApiKey } from "../resource/apikey.ts";
import { apiErrorText, type KubeApi } from "../kube/kube-api.ts";
import type { KeyStore } from "./keystore.ts";
import { formatRef, refOf } from "../resource/object-ref.ts";

export interface ApplyDeps {
  store: KeyStore;
  kube: KubeApi;
  clock: () => Date;
  log: Logger;
  /** Aborted when this replica stops leading: no action starts after that. */
  signal?: AbortSignal;
}

/** An action that failed, with the error it failed with. */
export class ActionFailed extends Error {
  readonly action: Action;

  constructor(action: Action, cause: unknown) {
    super(`${action.type} failed: ${apiErrorText(cause)}`, { cause });
    this.name = "ActionFailed";
    this.action = action;
  }
}

/**
 * What the API server's answers to a plan's writes told: the ApiKey as the last write to it returned
 * it (undefined when none did, or a status write, whose answer is not kept, came after), and whether
 * the plan wrote the Secret.
 */
export interface Applied {
  apiKey: ApiKey | undefined;
  wroteSecret: boolean;
}

const SECRET_WRITES: ReadonlySet<Action["type"]> = new Set(["createSecret", "replaceSecret", "deleteSecret"]);

export async function apply(deps: ApplyDeps, apiKey: ApiKey, actions: Action[]): Promise<Applied> {
  const log = deps.log.child({ apiKey: formatRef(refOf(apiKey)) });
  const applied: Applied = { apiKey: undefined, wroteSecret: false };
  for (const action of actions) {
    deps.signal?.throwIfAborted();
    let outcome: Outcome;
    try {
      outcome = await perform(deps, apiKey, action);
    } catch (error) {
      throw new ActionFailed(action, error);
    }
    if (typeof outcome === "object") applied.apiKey = outcome;
    else if (action.type === "patchStatus" || action.type === "beginRotation") applied.apiKey = undefined;
    if (SECRET_WRITES.has(action.type)) applied.wroteSecret = true;
    log.debug(describeAction(action), outcome === "unchanged" ? "found done already" : "applied");
    if (action.event && outcome !== "unchanged") {
      log[action.event.type === "Warning" ? "warn" : "info"]({ reason: action.event.reason }, action.event.message);
      await deps.kube.recordEvent(apiKey, action.event, deps.clock()).catch((error: unknown) => {
        // An event is for people: failing to record one must not fail the work it reports.
        log.warn({ reason: action.event?.reason, error: apiErrorText(error) }, "could not record event");
      });
    }
  }
  return applied;
}

/** "unchanged": the action found its work done already (by an earlier reconcile, cut short); an ApiKey: as the write left it. */
type Outcome = void | "unchanged" | ApiKey;

async function perform(deps: ApplyDeps, apiKey: ApiKey, action: Action): Promise<Outcome> {
  const ref = { namespace: apiKey.metadata.namespace ?? "", name: apiKey.metadata.name ?? "" };
  const owner = formatRef(refOf(apiKey));
  const finalizers = apiKey.metadata.finalizers ?? [];
  switch (action.type) {
    case "addFinalizer":
      return deps.kube.patchFinalizers(apiKey, [...finalizers, FINALIZER]);
    case "removeFinalizer":
      await deps.kube.patchFinalizers(apiKey, finalizers.filter((f) => f !== FINALIZER));
      return;
    case "provisionKey":
      return deps.store.provision(action.scope, action.name, action.active, owner, action.policy);
    case "claimKey":
      // Losing the race to another ApiKey is no failure: gathering again shows the conflict.
      await deps.store.claim(action.id, owner);
      return;
    case "renameKey":
      return deps.store.update(action, { name: action.name }, owner);
    case "setKeyActive":
      return deps.store.update(action, { active: action.active }, owner);
    case "setKeyPolicy":
      return deps.store.update(action, { policy: action.policy }, owner, action.balance);
    case "deleteKey":
      return deps.store.delete(action, owner);
    case "releaseKey":
      return deps.store.release(action.id, owner);
    case "createSecret":
      return deps.kube.createSecret(action.secret);
    case "replaceSecret":
      return deps.kube.replaceSecret(action.secret);
    case "deleteSecret":
      return deps.kube.deleteSecret({ namespace: ref.namespace, name: action.name }, action.uid);
    case "patchStatus":
      return deps.kube.patchStatus(ref, action.status);
    case "beginRotation":
      return deps.kube.patchStatus(ref, action.status, action.resourceVersion);
    case "rotateKey":
      return deps.store.rotate(action, action.gracePeriodSeconds, owner);
    case "restartWorkload":
      return (await deps.kube.restartWorkload({ kind: action.kind, namespace: ref.namespace, name: action.name }, action.marker)) ? undefined : "unchanged";
    case "retireKey":
      return deps.store.retire(action, owner);
    case "recordEvent":
      return;
  }
}
