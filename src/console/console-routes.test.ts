import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CONSOLE_CSP, consoleRoutes } from "./console-routes.ts";

// The console's files as the browser asks for them: those in public/ and its rooms, with the console's
// headers; nothing else under /console/.
let server: Server;
let base = "";
beforeAll(async () => {
  server = express().use(consoleRoutes()).listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it.each(["/console", "/console/main.js", "/console/console.css", "/console/keys/keys.js", "/console/shared/pager.js", "/console/webhooks/webhook-words.js"])(
  "serves %s with the console's Content-Security-Policy",
  async (path) => {
    const res = await fetch(base + path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
  },
);

it.each(["/console/keys", "/console/keys/nothing.js", "/console/shared/api.ts", "/console/%2e%2e/console-routes.ts", "/console/..%2fconsole-routes.ts", "/console/keys/shared/api.js"])(
  "serves nothing at %s",
  async (path) => expect((await fetch(base + path)).status).toBe(404),
);

it("refuses a method other than GET and HEAD on a room's file", async () => {
  const res = await fetch(`${base}/console/keys/keys.js`, { method: "POST" });
  expect(res.status).toBe(405);
  expect(res.headers.get("allow")).toBe("GET, HEAD");
});
