// webhooks/ of domain/: webhooks, their messages' signature, the retry schedule, the addresses they may
// not reach, when expiry notices are due. It may use domain/'s top files, scope/ and policy/.

import type { Scope } from "../scope/scope.ts";

// Lifecycle webhooks (docs/webhooks.md): what a webhook is, and the messages it is sent.

/** What a webhook can subscribe to: each key event's action as `key.<action>`, and two notices that are not events. */
export const WEBHOOK_TYPES = [
  "key.created", "key.updated", "key.rotated", "key.deleted", "key.expired", "key.expiring", "key.leaked", "key.usage_exceeded",
] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

/**
 * The most webhooks one scope may hold (docs/webhooks.md): every change to a key inside it is a message
 * to each of them, so one key may not make a change fan out without bound.
 */
export const WEBHOOKS_PER_SCOPE = 25;

export interface Webhook {
  id: number;
  /** The keys whose messages it gets: those inside this scope; null for every key (the admin's). */
  scope: Scope | null;
  url: string;
  events: WebhookType[];
  description: string | null;
  active: boolean;
  createdAt: Date;
  modifiedAt: Date;
}

/** A webhook as the store holds it: its secret only sealed. */
export interface StoredWebhook extends Webhook {
  secretSealed: Buffer;
}

/** One attempt to deliver a message: its HTTP status, or why there was none. */
export interface DeliveryAttempt {
  at: Date;
  status: number | null;
  error: string | null;
  durationMs: number | null;
}

export const DELIVERY_STATES = ["pending", "delivered", "failed"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One message to one webhook, and what became of it. */
export interface WebhookDelivery {
  id: number;
  type: WebhookType;
  state: DeliveryState;
  createdAt: Date;
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (or, while one is under way, when it is given up for lost); null once delivered or failed. */
  nextAttemptAt: Date | null;
}

/** The `webhook-id` of a delivery's every attempt (Standard Webhooks): the same each time, so a receiver can drop a repeat. */
export const messageId = (deliveryId: number): string => `msg_${deliveryId}`;

/**
 * A message's body: `{"type", "timestamp", "data": {"event"}}`, the event given as JSON text (a key
 * event, or a notice's subject) so that every attempt sends the same bytes.
 */
export function messageBody(type: WebhookType, timestamp: Date, eventJson: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(timestamp.toISOString())},"data":{"event":${eventJson}}}`;
}
