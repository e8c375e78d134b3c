import type { Request } from "express";
import type { Author } from "../domain/keys/key-event.ts";

// Who makes a change through the REST API, for the key's events: the calling key, or the admin.
export function keyAuthor(req: Request): Author {
  const { id, name } = req.principal!.key;
  return { actor: { type: "key", id, name }, requestId: req.id };
}

export function adminAuthor(req: Request): Author {
  return { actor: { type: "admin" }, requestId: req.id };
}
