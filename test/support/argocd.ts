import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

// Argo CD judges an ApiKey's health by running deploy/argocd/health.lua in a Lua 5.1 VM with the
// object as the global `obj`. This runs the same script in Debian's lua5.1, so the check is tested
// in the language version it is written for.
const run = promisify(execFile);
export const HEALTH_LUA = join(import.meta.dirname, "../../deploy/argocd/health.lua");
export const LUA = "/usr/bin/lua5.1";

export const haveLua = (): boolean => existsSync(LUA);

export interface Health {
  status: string;
  message: string;
}

export async function runArgoHealth(obj: unknown, script = HEALTH_LUA): Promise<Health> {
  // The script's return value is printed as two lines; a message never holds a newline.
  const driver = `obj = ${luaLiteral(obj)}
local hs = dofile(${luaString(script)})
io.write(hs.status, "\\n", hs.message or "", "\\n")`;
  const { stdout } = await run(LUA, ["-e", driver]);
  const [status = "", message = ""] = stdout.split("\n");
  return { status, message };
}

/** A Lua 5.1 table constructor for a JSON-like value (null and undefined become nil: absent). */
export function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "string") return luaString(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(", ")}}`;
  if (value instanceof Date) return luaString(value.toISOString());
  const fields = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `[${luaString(k)}] = ${luaLiteral(v)}`);
  return `{${fields.join(", ")}}`;
}

/** Lua 5.1 has no \u escapes: every byte outside printable ASCII goes as a decimal escape. */
function luaString(text: string): string {
  let out = '"';
  for (const byte of Buffer.from(text, "utf8")) {
    const printable = byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c;
    out += printable ? String.fromCharCode(byte) : `\\${byte}`;
  }
  return out + '"';
}
