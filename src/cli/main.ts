#!/usr/bin/env node
import { loadConfig } from "../config.ts";

// The keyplane command: a dispatcher; each command is a file of its own beside this one.
const USAGE = `usage: keyplane <command>

commands:
  serve     serve the REST API (and the operator, where a cluster is reachable)
  migrate   apply pending database migrations and exit
  crd       print the ApiKey CustomResourceDefinition as YAML
  keys      list, get, create, update, rotate and delete keys, and read their events, through the API
            (keyplane keys --help)
  webhooks  list, create, get, update and delete the calling key's webhooks, and read their
            deliveries, through the API (keyplane webhooks --help)

configuration comes from the environment: see README.md.`;

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case "serve": {
      const { serve } = await import("./serve.ts");
      await serve(loadConfig());
      return -1; // keeps running until a signal
    }
    case "migrate": {
      const { migrateCommand } = await import("./migrate.ts");
      await migrateCommand(loadConfig());
      return 0;
    }
    case "crd": {
      const { crdCommand } = await import("./crd.ts");
      await crdCommand();
      return 0;
    }
    case "keys": {
      const { keysCommand } = await import("./keys.ts");
      const { loadCliConfig } = await import("../config.ts");
      await keysCommand(argv.slice(1), loadCliConfig(), (text) => process.stdout.write(text));
      return 0;
    }
    case "webhooks": {
      const { webhooksCommand } = await import("./webhooks.ts");
      const { loadCliConfig } = await import("../config.ts");
      await webhooksCommand(argv.slice(1), loadCliConfig(), (text) => process.stdout.write(text));
      return 0;
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE + "\n");
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`keyplane: unknown command "${command}"\n\n${USAGE}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`keyplane: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
