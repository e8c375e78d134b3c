import type { Key } from "../../domain/model.ts";

// A key's JSON written directly, for long lists: the same text as JSON.stringify(keyJson(key))
// (present.ts, which stays the definition; key-text.test.ts holds the two together), without building
// the object first. The embedded directory objects are shared by the rows of a list (the store hands
// out one object per entity), so each is serialised once, and a run of equal times once.
const embedded = new WeakMap<object, string>();

function entity(value: object): string {
  let text = embedded.get(value);
  if (text === undefined) embedded.set(value, (text = JSON.stringify(value)));
  return text;
}

let lastTime = NaN;
let lastText = "";
function time(value: Date | null): string {
  if (value === null) return "null";
  const ms = value.getTime();
  if (ms !== lastTime) {
    lastTime = ms;
    lastText = `"${value.toISOString()}"`;
  }
  return lastText;
}

export function keyJsonText(key: Key): string {
  let text =
    `{"id":${key.id},"keyId":${JSON.stringify(key.keyId)},"name":${JSON.stringify(key.name)},"active":${key.active},` +
    `"type":${JSON.stringify(key.type)},"tenantId":${key.tenantId},"domainId":${key.domainId},"applicationId":${key.applicationId},` +
    `"subscriberId":${key.subscriberId},"userId":${key.userId},"secret":null,"createdAt":${time(key.createdAt)},` +
    `"modifiedAt":${time(key.modifiedAt)},"deletedAt":${time(key.deletedAt)},"activeAt":${time(key.activeAt)},` +
    `"expiresAt":${time(key.expiresAt)},"lastUsedAt":${time(key.lastUsedAt)},"replacedBy":${key.replacedBy},"parentId":${key.parentId},` +
    `"policy":${key.policy === null ? "null" : JSON.stringify(key.policy)},` +
    `"tenant":${entity(key.tenant)},"tenant-id":${key.tenantId}`;
  if (key.domain) text += `,"domain":${entity(key.domain)},"domain-id":${key.domainId}`;
  if (key.application) text += `,"application":${entity(key.application)},"application-id":${key.applicationId}`;
  if (key.subscriber) text += `,"subscriber":${entity(key.subscriber)},"subscriber-id":${key.subscriberId}`;
  if (key.user) text += `,"user":${entity(key.user)},"user-id":${key.userId}`;
  return text + "}";
}
