import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

// keyplane as a real process: `node src/cli/main.ts serve`, as a user starts it.
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export async function startServerProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [MAIN, "serve"], {
    env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: "0", KEYPLANE_OPERATOR: "off", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running for nobody to stop: the caller never gets it.
      child.kill("SIGKILL");
      reject(new Error(`keyplane did not start:\n${out}`));
    }, timeoutMs);
    const check = () => {
      const line = out.split("\n").find((l) => l.includes('"keyplane serving"'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`keyplane exited with ${code}:\n${out}`));
    });
  });
  return {
    child,
    url,
    stdout: () => out,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const [code] = (await once(child, "exit")) as [number | null];
      return code;
    },
  };
}
