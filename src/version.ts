import { readFileSync } from "node:fs";

// keyplane's version, as package.json gives it: the one place it is written.
export const VERSION: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
