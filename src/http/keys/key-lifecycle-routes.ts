import type { Request, Response } from "express";
import type { KeyEvent } from "../../domain/keys/key-event.ts";
import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { VerificationNeeds } from "../../services/verification/needs.ts";
import { listEvents, listKeyEvents, type EventPage } from "../../services/keys/key-events.ts";
import { rotateKey } from "../../services/keys/key-rotation.ts";
import { keyShown } from "../../services/keys/keys.ts";
import { keyAuthor } from "../author.ts";
import { setNextLink } from "./key-list.ts";
import { authorizedScope, callerReach, keyRef } from "./key-scope.ts";
import { eventJson, keyJson } from "./present.ts";
import { route, type Route } from "../route.ts";
import { eventObject, eventsQuery, keyEventsQuery, keyObject, rotateBody } from "../schemas.ts";

// Rotation and events on the key paths (docs/api.md, "Lifecycle" and "Events").

const ROTATE_SUMMARY = "Rotate a key: a new key with a new token takes its name; the old one works until the grace period ends";

/** Rotation and the events of one key, on a key base. Whoever may PUT a key may rotate it. */
export function keyLifecycleRoutes(ctx: KeysNeeds & VerificationNeeds, base: string, noun: string, tag: string): Route[] {
  const one = `${base}/:keyId`;
  return [
    route({
      method: "post", path: `${one}/rotate`, operationId: `rotate${noun}Key`, tag, auth: "key", body: rotateBody, refusals: ["not_found", "conflict"],
      summary: ROTATE_SUMMARY,
      ok: { status: 200, description: "The new key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const scope = await authorizedScope(ctx, req);
        res.json(keyJson(await keyShown(ctx, await rotateKey(ctx, scope, keyRef(req), body, keyAuthor(req)))));
      },
    }),
    route({
      method: "get", path: `${one}/events`, operationId: `list${noun}KeyEvents`, tag, auth: "key", query: keyEventsQuery, refusals: ["not_found"],
      summary: "One key's events, oldest first; by numeric id also once the key is deleted or expired",
      ok: { status: 200, description: "The key's events", schema: eventObject.array() },
      handle: async (req, res, { query }) => {
        const scope = await authorizedScope(ctx, req);
        res.json((await listKeyEvents(ctx, scope, keyRef(req), query.action)).map(eventJson));
      },
    }),
  ];
}

/** POST /keys/self/rotate: the calling key rotates itself. */
export function rotateSelfRoute(ctx: KeysNeeds & VerificationNeeds): Route {
  return route({
    method: "post", path: "/keys/self/rotate", operationId: "rotateSelfKey", tag: "keys", auth: "key", body: rotateBody, refusals: ["not_found", "conflict"],
    summary: `${ROTATE_SUMMARY} (the calling key)`,
    ok: { status: 200, description: "The new key", schema: keyObject },
    handle: async (req, res, { body }) => {
      res.json(keyJson(await keyShown(ctx, await rotateKey(ctx, callerReach(req), String(req.principal!.key.id), body, keyAuthor(req)))));
    },
  });
}

/** GET /events: the events of every key the caller may manage, newest first. */
export function eventsRoute(ctx: KeysNeeds & VerificationNeeds): Route {
  return route({
    method: "get", path: "/events", operationId: "listEvents", tag: "keys", auth: "key", query: eventsQuery,
    summary: "The events of every key the calling key may manage, newest first",
    ok: { status: 200, description: "A page of events", schema: eventObject.array(), headers: ["Link"] },
    handle: async (req, res, { query }) => sendEventPage(req, res, query, (page) => listEvents(ctx, callerReach(req), page)),
  });
}

/** A page of events, newest first, with `Link: rel="next"` while older ones remain: one more than asked is read to know. */
export async function sendEventPage(req: Request, res: Response, page: EventPage, read: (page: EventPage) => Promise<KeyEvent[]>): Promise<void> {
  const events = await read({ ...page, limit: page.limit + 1 });
  if (events.length > page.limit) {
    events.length = page.limit;
    setNextLink(req, res, "before", events[page.limit - 1]!.id);
  }
  res.json(events.map(eventJson));
}
