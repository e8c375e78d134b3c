import type { KeyObject } from "node:crypto";
import type { Logger } from "pino";
import { eventJson } from "../../domain/keys/key-json.ts";
import type { Sealer } from "../../domain/seal.ts";
import { messageBody, messageId, type DeliveryAttempt } from "../../domain/webhooks/webhook.ts";
import { ATTEMPT_TIMEOUT_MS, MAX_ATTEMPTS, nextAttemptAt, retryAfterSeconds } from "../../domain/webhooks/webhook-schedule.ts";
import { secretKey, webhookHeaders } from "../../domain/webhooks/webhook-signature.ts";
import type { Database } from "../../store/database.ts";
import { deliveryClaim, deliveryFinish, deliveryNextDue, WEBHOOKS_CHANNEL, type ClaimedDelivery, type DeliveryResult } from "../../store/webhooks/webhook-deliveries.ts";
import { webhookDeactivate } from "../../store/webhooks/webhooks.ts";
import type { WebhookClient } from "./webhook-client.ts";
import { webhookSecret } from "./webhooks.ts";

// The sender (docs/webhooks.md, "Delivery"): every process runs one. It claims due deliveries from
// the outbox (FOR UPDATE SKIP LOCKED, for a lease), makes each attempt through the injected client,
// and writes the outcomes back in batches. It is woken by the outbox's announcement of new messages,
// by a timer set to the next retry, and by a poll; none of it runs on a request's path, and its
// statements go to a database (a pool) of its own where there is one.

/**
 * While it has attempts under way, and for a second after, a sender looks for new messages this often:
 * writers do not announce them then (migrations/0006_webhooks.sql: an announcement makes commits wait).
 */
export const BUSY_POLL_MS = 100;
const BUSY_GRACE_MS = 1_000;
/**
 * While the process's requests keep it busy (`yieldTo`), a sender claims at most this many messages
 * every BUSY_POLL_MS (100 a second, some 3% of a core): the rest wait in the outbox until the load falls.
 */
export const YIELDING_BATCH = 10;
/**
 * How far ahead a busy sender says it is busy (webhook_senders, migrations/0006_webhooks.sql), written
 * again only when less than half of it is left: every writer of messages reads that one row, and a row
 * updated at each claim would grow a chain of versions each of them walks.
 */
const BUSY_RECORD_MS = 2_000;

/** How a delivery's attempt ended, for the metrics. */
export type SendResult = "delivered" | "retrying" | "failed" | "deactivated";

export interface WebhookSenderOptions {
  db: Database;
  sealer: Sealer;
  client: WebhookClient;
  clock: () => Date;
  log: Logger;
  /** Attempts at once (32). */
  concurrency?: number;
  /** How often due deliveries are looked for when nothing announced any (5 s). */
  pollMs?: number;
  /** How long a claim holds a delivery: past it, another process may try it (the time-out and 5 s). */
  leaseMs?: number;
  /** In [0, 1): the retries' jitter (Math.random). */
  random?: () => number;
  /** True while the key paths keep the process busy: the sender then sends slowly (YIELDING_BATCH). */
  yieldTo?: () => boolean;
  onResult?: (result: SendResult) => void;
}

export class WebhookSender {
  readonly #o: Required<Omit<WebhookSenderOptions, "onResult">> & Pick<WebhookSenderOptions, "onResult">;
  readonly #attempts = new Set<Promise<void>>();
  #results: DeliveryResult[] = [];
  readonly #gone = new Set<number>();
  #flushing: Promise<void> | undefined;
  #filling: Promise<void> | undefined;
  #claimed = 0;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  /** When #timer fires (performance.now()). */
  #timerAt = Infinity;
  #poll: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #stopped = false;
  /** When this sender last claimed a delivery or finished an attempt (performance.now()). */
  #busyAt = -Infinity;
  /** Until when, on the clock, this sender last recorded that it is busy. */
  #busyRecorded = -Infinity;
  #busyClaimed = -Infinity;
  /**
   * Each webhook's signing key, with its sealed secret as hex: the row's Buffer is a slice of a shared
   * 8 KiB slab, which it would hold for as long as the webhook is kept (docs/scaling.md, "Memory").
   */
  readonly #keys = new Map<number, { sealedHex: string; key: KeyObject }>();

  constructor(options: WebhookSenderOptions) {
    this.#o = { concurrency: 32, pollMs: 5_000, leaseMs: ATTEMPT_TIMEOUT_MS + 5_000, random: Math.random, yieldTo: () => false, ...options };
  }

  /** Listens for new messages and starts the poll; resolves once listening. */
  async start(): Promise<void> {
    const wakeOnReturn = (state: string) => state === "restored" && this.wake();
    this.#unlisten = await this.#o.db.listen({ [WEBHOOKS_CHANNEL]: () => this.wake() }, wakeOnReturn, undefined, "webhooks");
    // The poll stands in for the timer only when the timer is not set to wake it sooner: both, an idle
    // sender would look twice every interval (docs/scaling.md, "What an idle process costs").
    this.#poll = setInterval(() => this.#timerAt > performance.now() + this.#o.pollMs && this.wake(), this.#o.pollMs).unref();
    this.wake();
  }

  /** Looks for due deliveries soon (once for any number of calls in the meantime). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#filling) {
      this.#again = true;
      return;
    }
    this.#filling = this.#fill()
      .catch((error: unknown) => this.#o.log.warn({ err: error }, "could not claim webhook deliveries; will retry"))
      .finally(() => {
        this.#filling = undefined;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  /**
   * Claims what is due while there is room; when nothing is, sets the timer to the next retry. While
   * yielding, one small batch, then the timer (finished attempts do not wake it then).
   */
  async #fill(): Promise<void> {
    while (!this.#stopped) {
      const yielding = this.#o.yieldTo();
      const room = Math.min(this.#o.concurrency - this.#attempts.size, yielding ? YIELDING_BATCH : Infinity);
      const now = this.#o.clock();
      if (room > 0) {
        const batch = await deliveryClaim(this.#o.db, now, room, new Date(now.getTime() + this.#o.leaseMs), this.#busyUntil(now, false));
        for (const d of batch) this.#track(this.#attempt(d));
        this.#claimed += batch.length;
        if (batch.length > 0) {
          this.#busyAt = performance.now();
          this.#busyRecorded = Math.max(this.#busyRecorded, this.#busyClaimed);
        }
        if (batch.length === room && !yielding) continue;
      } else if (!yielding) {
        return; // a finished attempt wakes it
      }
      await this.#timeNext(now);
      return;
    }
  }

  #track(attempt: Promise<void>): void {
    this.#attempts.add(attempt);
    void attempt.finally(() => {
      this.#attempts.delete(attempt);
      this.#busyAt = performance.now();
      // Claims come in batches: the next when half the room is free, or all of it; while yielding, at the busy poll's pace.
      if (this.#attempts.size > this.#o.concurrency / 2) return;
      if (this.#o.yieldTo()) {
        if (this.#timerAt > performance.now() + BUSY_POLL_MS) this.#wakeIn(BUSY_POLL_MS);
      } else {
        this.wake();
      }
    });
  }

  /**
   * What a claim or an outcome's write records as busy: a new end when less than half of the last one
   * is left, else null (left as it is). A claim's is recorded only if it finds work, so it counts as
   * written only then (`certain`: an outcome's write always records it).
   */
  #busyUntil(now: Date, certain: boolean): Date | null {
    if (this.#busyRecorded - now.getTime() > BUSY_RECORD_MS / 2) return null;
    const until = now.getTime() + BUSY_RECORD_MS;
    if (certain) this.#busyRecorded = until;
    else this.#busyClaimed = until;
    return new Date(until);
  }

  /** The timer: soon while busy (writers do not wake a busy sender); else to the next delivery due, or the poll's interval if sooner. */
  async #timeNext(now: Date): Promise<void> {
    const busy = this.#attempts.size > 0 || performance.now() - this.#busyAt < BUSY_GRACE_MS;
    const next = busy ? undefined : await deliveryNextDue(this.#o.db);
    if (this.#stopped) return;
    const wait = busy ? BUSY_POLL_MS : next === undefined ? this.#o.pollMs : Math.min(this.#o.pollMs, Math.max(0, next.getTime() - now.getTime()) + 1);
    this.#wakeIn(wait);
  }

  /** Wakes the sender in `ms`, in place of any wake-up set before. */
  #wakeIn(ms: number): void {
    clearTimeout(this.#timer);
    this.#timerAt = performance.now() + ms;
    this.#timer = setTimeout(() => {
      this.#timerAt = Infinity;
      this.wake();
    }, ms).unref();
  }

  async #attempt(d: ClaimedDelivery): Promise<void> {
    const n = d.attempts + 1;
    // An inactive webhook's message, or one whose attempts were all abandoned by dying processes: no attempt.
    if (!d.active || d.attempts >= MAX_ATTEMPTS) return this.#finished(d, undefined, "failed", null);
    const body = messageBody(d.type, d.createdAt, d.event ? JSON.stringify(eventJson(d.event)) : d.payload!);
    const at = this.#o.clock();
    const started = performance.now();
    const outcome = await this.#o.client.send({ url: d.url, headers: webhookHeaders(this.#key(d), messageId(d.id), at, body), body });
    const attempt: DeliveryAttempt = {
      at, status: "status" in outcome ? outcome.status : null, error: "error" in outcome ? outcome.error : null, durationMs: Math.round(performance.now() - started),
    };
    if (attempt.status !== null && attempt.status >= 200 && attempt.status < 300) return this.#finished(d, attempt, "delivered", null);
    if (attempt.status === 410) {
      this.#gone.add(d.webhookId);
      return this.#finished(d, attempt, "failed", null, "deactivated");
    }
    const now = this.#o.clock();
    const retryAfter = "status" in outcome ? retryAfterSeconds(outcome.retryAfter, now) : undefined;
    const next = nextAttemptAt(n, now, retryAfter, this.#o.random);
    return this.#finished(d, attempt, next ? "pending" : "failed", next);
  }

  /** The signing key of a delivery's webhook, opened once per webhook and secret. */
  #key(d: ClaimedDelivery): KeyObject {
    const sealedHex = d.secretSealed.toString("hex");
    const kept = this.#keys.get(d.webhookId);
    if (kept?.sealedHex === sealedHex) return kept.key;
    if (this.#keys.size > 10_000) this.#keys.clear();
    const key = secretKey(webhookSecret(this.#o, d.webhookId, d.secretSealed));
    this.#keys.set(d.webhookId, { sealedHex, key });
    return key;
  }

  #finished(d: ClaimedDelivery, attempt: DeliveryAttempt | undefined, state: DeliveryResult["state"], next: Date | null, label?: SendResult): void {
    this.#o.onResult?.(label ?? (state === "pending" ? "retrying" : state));
    this.#results.push({ id: d.id, claim: d.claim, attempt, state, nextAttemptAt: next });
    this.#flushing ??= this.#flush().finally(() => (this.#flushing = undefined));
  }

  /** Writes the outcomes gathered so far, a batch per statement; on a failure, tries again in a second. */
  async #flush(): Promise<void> {
    while (this.#results.length > 0 && !this.#stopped) {
      const batch = this.#results;
      this.#results = [];
      try {
        await deliveryFinish(this.#o.db, batch, this.#busyUntil(this.#o.clock(), true));
        for (const id of this.#gone) await webhookDeactivate(this.#o.db, id, this.#o.clock());
        this.#gone.clear();
      } catch (error) {
        this.#results.unshift(...batch);
        this.#o.log.warn({ err: error, deliveries: batch.length }, "could not record webhook attempts; will retry");
        await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
      }
    }
  }

  /** Makes every attempt due now and waits for their outcomes to be written: for tests, which move the clock themselves. */
  async drain(): Promise<void> {
    for (;;) {
      const before = this.#claimed;
      this.wake();
      while (this.#filling) await this.#filling;
      await Promise.all(this.#attempts);
      while (this.#flushing) await this.#flushing;
      if (this.#claimed === before && this.#attempts.size === 0) return;
    }
  }

  /**
   * Stops claiming, and waits up to `waitMs` for the attempts under way and their outcomes: an attempt
   * still unfinished then is tried again by another process (or this one, restarted) once its lease ends.
   */
  async close(waitMs = 2_000): Promise<void> {
    clearInterval(this.#poll);
    clearTimeout(this.#timer);
    await this.#unlisten?.();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all([this.#filling, ...this.#attempts]).then(() => this.#flushing), late]);
    clearTimeout(timer);
    this.#stopped = true;
    this.#o.client.close();
  }
}
