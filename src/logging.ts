import pino, { type DestinationStream, type Logger } from "pino";
import { tokenHint } from "./domain/keys/token.ts";

// Every log line passes through one scrub, whatever logged it (docs/api.md, "Logs"). Code logs what
// cannot hold a secret (route patterns, ids, codes); this is the guarantee for the rest: a token, or
// the admin token, in any spelling a request can carry (percent-encoded, in any letter case) never
// reaches the log. An exact token keeps its hint ("XI…7798"), any other spelling of a secret becomes
// "[redacted]".
const TOKEN_IN_TEXT = /XI[0-9A-F]{32}/g;
const TOKEN_ANY_CASE = /xi[0-9a-f]{32}/;
/** A run of characters a URL, a header or a JSON string may spell a token or the admin token with. */
const CANDIDATE = /[\w%.~+-]{20,}/g;

export function redactTokens(text: string): string {
  return text.replace(TOKEN_IN_TEXT, tokenHint);
}

/**
 * Percent-decodes until nothing changes (a double-encoded %2558 is still an X); bad escapes stay as
 * they are. Each pass that changes anything shortens the text, so this ends.
 */
function decoded(text: string): string {
  let current = text;
  while (current.includes("%")) {
    const next = current.replace(/%[0-9A-Fa-f]{2}/g, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
    if (next === current) break;
    current = next;
  }
  return current;
}

/** The line with every spelling of a token or of `secrets` (lower-cased) taken out. */
export function scrub(line: string, secrets: readonly string[] = []): string {
  return redactTokens(line).replace(CANDIDATE, (run) => {
    const plain = decoded(run).toLowerCase();
    return TOKEN_ANY_CASE.test(plain) || secrets.some((s) => plain.includes(s)) ? "[redacted]" : run;
  });
}

export interface LoggerOptions {
  level?: string;
  secrets?: string[];
  destination?: DestinationStream;
}

/** Whether the line still holds a token or one of `secrets` (lower-cased) in any spelling, wherever it lies. */
function holdsSecret(line: string, secrets: readonly string[]): boolean {
  const plain = decoded(line).toLowerCase();
  return TOKEN_ANY_CASE.test(plain) || secrets.some((s) => plain.includes(s));
}

/** What is written instead of a line that could not be scrubbed: when, how grave, and why it is missing. */
function withheld(line: string): string {
  let head: { level?: unknown; time?: unknown } = {};
  try {
    head = JSON.parse(line) as typeof head;
  } catch {
    // not JSON: nothing of it is kept
  }
  return JSON.stringify({ level: head.level, time: head.time, service: "keyplane", msg: "log line withheld: it held a secret" }) + "\n";
}

export function createLogger({ level = "info", secrets = [], destination = pino.destination(1) }: LoggerOptions = {}): Logger {
  const given = secrets.filter((s) => s.length > 0);
  const hidden = given.map((s) => s.toLowerCase());
  // A secret as a JSON string spells it (with \" or \\ where it has " or \), for the last check.
  const watched = [...new Set([...hidden, ...hidden.map((s) => JSON.stringify(s).slice(1, -1))])];
  const scrubbing: DestinationStream = {
    write(line: string) {
      let clean = scrub(line, hidden);
      // A secret with characters outside the candidate runs (the admin token may hold any): as written.
      for (const secret of given) clean = clean.replaceAll(secret, "[redacted]").replaceAll(JSON.stringify(secret).slice(1, -1), "[redacted]");
      // What the runs could not isolate (such a secret in another letter case) costs the whole line.
      if (holdsSecret(clean, watched)) clean = withheld(clean);
      destination.write(clean);
    },
  };
  return pino({ level, base: { service: "keyplane" }, timestamp: pino.stdTimeFunctions.isoTime }, scrubbing);
}
