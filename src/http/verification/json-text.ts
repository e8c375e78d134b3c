import type { ServerResponse } from "node:http";

// The 200 answers of the paths answered before express (GET /keys/self, POST /verify): a JSON text made
// once and kept with its length, sent with all its headers in one writeHead (docs/adr/0004).

/** A JSON text and its length in bytes (for Content-Length). */
export interface JsonText {
  text: string;
  length: number;
}

export function jsonText(value: unknown): JsonText {
  const text = JSON.stringify(value);
  return { text, length: Buffer.byteLength(text) };
}

/**
 * Sends it as a string: Node sends a string body in one write with the headers, a Buffer in a second.
 * The request id goes with the other headers (requestId in request-log.ts says why).
 */
export function sendJsonText(res: ServerResponse, json: JsonText, reqId: string): void {
  // The header names spelled out (X-Request-Id is request-log.ts's REQUEST_ID): V8 copies such a literal
  // from a template, where a computed key is defined at run time on every call.
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": json.length, "X-Request-Id": reqId });
  res.end(json.text);
}
