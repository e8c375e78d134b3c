import type { Logger } from "pino";
import { keyJsonWithoutToken } from "../../domain/keys/key-json.ts";
import { nextRefillAt } from "../../domain/policy/limits/refill.ts";
import { scopeOf } from "../../domain/scope/scope.ts";
import type { Queryable } from "../../store/database.ts";
import { keyFindEverById } from "../../store/keys/keys.ts";
import { entityHolderFind, expiryNoticesDue, expiryNoticesPrune, expiryNoticesSend, noticeKeys, usageNoticeSend } from "../../store/webhooks/webhook-notices.ts";
import type { CounterStore } from "../policy/policy-meter.ts";

// The webhook messages that no key event carries (docs/webhooks.md): key.expiring, at each of
// KEYPLANE_EXPIRY_NOTICES before a key's expiry, and key.usage_exceeded, when a balance reaches 0.
// Each is recorded as sent with its messages, so several processes noticing the same send it once.

export const EXPIRY_NOTICE_MS = 20_000;
const BATCH = 200;

interface Deps {
  db: Queryable;
  clock: () => Date;
  log: Logger;
}

/** The sweep of expiry notices: every process runs one. */
export class ExpiryNotices {
  readonly #deps: Deps;
  readonly #notices: readonly number[];
  /** What the last complete sweep looked at: notices due by then were sent then. */
  #since: Date | null = null;

  /** `notices`: seconds before an expiry, furthest first. */
  constructor(deps: Deps, notices: readonly number[]) {
    this.#deps = deps;
    this.#notices = notices;
  }

  /** Sends every notice due; returns how many. */
  async sweep(): Promise<number> {
    const { db, clock } = this.#deps;
    const now = clock();
    let sent = 0;
    for (;;) {
      const due = await expiryNoticesDue(db, now, this.#notices, this.#since, BATCH);
      if (due.length === 0) break;
      const keys = new Map((await noticeKeys(db, [...new Set(due.map((d) => d.keyId))])).map((k) => [k.id, k]));
      const notices = due.filter((d) => keys.has(d.keyId)).map((d) => ({ ...d, payload: JSON.stringify(keyJsonWithoutToken(keys.get(d.keyId)!)) }));
      sent += (await expiryNoticesSend(db, notices, now)).notices;
      if (due.length < BATCH) break;
    }
    this.#since = now;
    return sent;
  }

  /** Forgets the notices of expiries that have passed. */
  async prune(): Promise<void> {
    await expiryNoticesPrune(this.#deps.db, this.#deps.clock());
  }
}

type HolderLevel = "key" | "customer" | "domain" | "application" | "subscriber";

/** key.usage_exceeded: each balance's generation that reached 0, sent once (a refill, or a set, starts a new one). */
export class UsageNotices {
  readonly #deps: Deps;
  /** What this process has sent (or is sending): a balance at 0 is asked about again and again. */
  readonly #seen = new Set<string>();

  constructor(deps: Deps) {
    this.#deps = deps;
  }

  /** A grant found `holder`'s balance at 0: the notice goes out in the background, off the request's path. */
  reachedZero(holder: string, generation: number): void {
    const id = `${holder}#${generation}`;
    if (this.#seen.has(id)) return;
    if (this.#seen.size > 10_000) this.#seen.clear();
    this.#seen.add(id);
    this.#send(holder, generation).catch((error: unknown) => {
      this.#seen.delete(id);
      this.#deps.log.warn({ err: error, holder }, "could not record a balance used up; the next grant that finds it empty will try again");
    });
  }

  async #send(holder: string, generation: number): Promise<void> {
    const { db, clock } = this.#deps;
    const [level, idText] = holder.split(":") as [HolderLevel, string];
    const id = Number(idText);
    const now = clock();
    const key = level === "key" ? await keyFindEverById(db, id) : undefined;
    const entity = level === "key" ? undefined : await entityHolderFind(db, level, id);
    const scope = key ? scopeOf(key) : entity?.scope;
    if (!scope) return;
    const refill = (key ? key.policy : entity?.policy)?.credits?.refill;
    const payload = JSON.stringify({
      at: now,
      scope: level,
      ...scope,
      key: key ? keyJsonWithoutToken(key) : null,
      credits: { remaining: 0, nextRefillAt: refill ? nextRefillAt(now, refill) : null },
    });
    await usageNoticeSend(db, holder, generation, scope, payload, now);
  }
}

/** The meter's statements, with every grant that finds a balance at 0 (or leaves it there) told to `notices`. */
export function noticingEmptyBalances(store: CounterStore, notices: UsageNotices): CounterStore {
  return {
    ...store,
    async balanceGrant(holder, ...rest) {
      const grant = await store.balanceGrant(holder, ...rest);
      if (grant.left === 0 && grant.generation >= 0) notices.reachedZero(holder, grant.generation);
      return grant;
    },
  };
}
