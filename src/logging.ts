import pino, { type DestinationStream, type Logger } from "pino";
import { tokenHint } from "./domain/token.ts";

// Every log line passes through one redaction, whatever logged it: a token becomes its hint
// ("XI…7798") and each configured secret (the admin token) becomes "[redacted]". Code also avoids
// logging them; this is the guarantee.
const TOKEN_IN_TEXT = /XI[0-9A-F]{32}/g;

export function redactTokens(text: string): string {
  return text.replace(TOKEN_IN_TEXT, tokenHint);
}

export interface LoggerOptions {
  level?: string;
  secrets?: string[];
  destination?: DestinationStream;
}

export function createLogger({ level = "info", secrets = [], destination = pino.destination(1) }: LoggerOptions = {}): Logger {
  // A secret may appear JSON-escaped inside a line, so both spellings are hidden.
  const hidden = secrets.filter((s) => s.length > 0).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
  const redacting: DestinationStream = {
    write(line: string) {
      let clean = redactTokens(line);
      for (const secret of hidden) clean = clean.replaceAll(secret, "[redacted]");
      destination.write(clean);
    },
  };
  return pino({ level, base: { service: "keyplane" }, timestamp: pino.stdTimeFunctions.isoTime }, redacting);
}
