import { describe, expect, it } from "vitest";
import { createLogger, scrub } from "./logging.ts";

// The last line of defence of docs/api.md, "Logs": whatever a caller logs, no spelling of a token or
// of the admin token comes out.
function capture(secrets: string[] = []) {
  const lines: string[] = [];
  const log = createLogger({ level: "debug", secrets, destination: { write: (line: string) => void lines.push(line) } });
  return { log, lines };
}

const TOKEN = "XI0123456789ABCDEF0123456789AB7798";
const encode = (text: string) => [...text].map((c) => "%" + c.charCodeAt(0).toString(16).toUpperCase()).join("");
const decodeAll = (text: string) => {
  let current = text;
  for (;;) {
    const next = current.replace(/%[0-9A-Fa-f]{2}/g, (e) => String.fromCharCode(parseInt(e.slice(1), 16)));
    if (next === current) return current.toLowerCase();
    current = next;
  }
};

describe("the log's scrub", () => {
  it("keeps an exact token's hint, and what is not a secret as it was", () => {
    const { log, lines } = capture();
    log.info({ token: TOKEN, reqId: "6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f", route: "/keys/:keyId" }, "request");
    const line = JSON.parse(lines[0]!) as Record<string, string>;
    expect(line).toMatchObject({ token: "XI…7798", reqId: "6f1c2a4e-8d3b-4c7a-9e2f-1a2b3c4d5e6f", route: "/keys/:keyId" });
  });

  it("takes out a token percent-encoded any number of times, in any letter case", () => {
    let spelled = TOKEN.toLowerCase();
    for (let depth = 0; depth < 6; depth++) {
      spelled = encode(spelled);
      const { log, lines } = capture();
      log.warn({ said: `before ${spelled} after` }, "something");
      expect(decodeAll(lines.join("")), `encoded ${depth + 1} times`).not.toContain(TOKEN.toLowerCase());
    }
  });

  it("withholds a line holding an admin token that runs of URL characters cannot isolate", () => {
    const admin = "Abc/Def+Ghi=Jkl/Mno+Pqr=Stu/Vwx+Yz01=";
    const { log, lines } = capture([admin]);
    log.error({ err: { message: `no customer ${admin.toLowerCase()}` } }, "unexpected error");
    log.error({ err: { message: `no customer ${admin}` } }, "unexpected error");
    expect(decodeAll(lines.join(""))).not.toContain(admin.toLowerCase());
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, msg: "log line withheld: it held a secret" });
    expect(JSON.parse(lines[1]!).err.message).toBe("no customer [redacted]");
  });

  it("scrub alone takes out spellings of a secret inside runs of URL characters", () => {
    expect(scrub(`path /admin/customers/KPA_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789`, ["kpa_abcdefghijklmnopqrstuvwxyz0123456789"])).toBe("path /admin/customers/[redacted]");
  });
});
