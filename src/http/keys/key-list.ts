import type { Request, Response } from "express";
import type { Key } from "../../domain/model.ts";
import { drained } from "../response.ts";
import { keyJsonText } from "./key-text.ts";
import { keyJson } from "./present.ts";

/**
 * Answers a key list. Without `limit` the whole list streams as one JSON array, written as it is read
 * and paced by the client (backpressure), so its length does not bound memory. With `limit`, one more
 * key than asked is read to learn whether a `Link: rel="next"` is due.
 */
export async function sendKeyList(
  req: Request,
  res: Response,
  read: (limit?: number) => AsyncIterable<Key>,
  limit: number | undefined,
): Promise<void> {
  if (limit !== undefined) {
    const page: Key[] = [];
    for await (const key of read(limit + 1)) page.push(key);
    if (page.length > limit) {
      page.length = limit;
      setNextLink(req, res, "after", page[limit - 1]!.id);
    }
    res.json(page.map(keyJson));
    return;
  }
  res.status(200).type("application/json");
  let first = true;
  let chunk = "";
  for await (const key of read()) {
    chunk += (first ? "[" : ",") + keyJsonText(key);
    first = false;
    if (chunk.length < CHUNK_CHARS) continue;
    const accepted = res.write(chunk);
    chunk = "";
    if (!accepted && !(await drained(res))) return; // the client went away
  }
  res.end(first ? "[]" : chunk + "]");
}

/** Keys are written in chunks of about this many characters: one write per key costs more than the key. */
const CHUNK_CHARS = 64 * 1024;

/** `Link: <this request's URL, with `param` set to `value`>; rel="next"`: every other query parameter is kept. */
export function setNextLink(req: Request, res: Response, param: string, value: number): void {
  const url = new URL(req.originalUrl, "http://keyplane");
  url.searchParams.set(param, String(value));
  res.setHeader("Link", `<${url.pathname}${url.search}>; rel="next"`);
}
