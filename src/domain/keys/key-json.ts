import type { KeyEvent } from "./key-event.ts";
import type { Key, StoredKey } from "../model.ts";

// The one shape of every key response (docs/api.md, "Keys"): the full listing form, with the hyphenated ids
// beside each embedded object. Directory objects serialise as they are; Dates become RFC 3339 UTC.
export function keyJson(key: Key): Record<string, unknown> {
  const body: Record<string, unknown> = {
    id: key.id,
    keyId: key.keyId,
    name: key.name,
    active: key.active,
    type: key.type,
    tenantId: key.tenantId,
    domainId: key.domainId,
    applicationId: key.applicationId,
    subscriberId: key.subscriberId,
    userId: key.userId,
    secret: null,
    createdAt: key.createdAt,
    modifiedAt: key.modifiedAt,
    deletedAt: key.deletedAt,
    activeAt: key.activeAt,
    expiresAt: key.expiresAt,
    lastUsedAt: key.lastUsedAt,
    replacedBy: key.replacedBy,
    parentId: key.parentId,
    policy: key.policy,
    tenant: key.tenant,
    "tenant-id": key.tenantId,
  };
  if (key.domain) Object.assign(body, { domain: key.domain, "domain-id": key.domainId });
  if (key.application) Object.assign(body, { application: key.application, "application-id": key.applicationId });
  if (key.subscriber) Object.assign(body, { subscriber: key.subscriber, "subscriber-id": key.subscriberId });
  if (key.user) Object.assign(body, { user: key.user, "user-id": key.userId });
  return body;
}

/** An event as the API shows it (docs/api.md, "Events"): the contract's field order; no token, ever. */
export function eventJson(e: KeyEvent): Record<string, unknown> {
  return { id: e.id, at: e.at, action: e.action, key: e.key, actor: e.actor, changes: e.changes, requestId: e.requestId, count: e.count };
}

/** A key in the full shape without its keyId: POST /verify's key (the caller has the token), a webhook notice's (docs/webhooks.md). */
export function keyJsonWithoutToken(key: StoredKey): Record<string, unknown> {
  const { sealed: _sealed, hash: _hash, ...shown } = key;
  const { keyId: _keyId, ...body } = keyJson({ ...shown, keyId: "" });
  return body;
}
