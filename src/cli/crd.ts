// `keyplane crd`: prints the ApiKey CRD as YAML. `node src/cli/crd.ts --write` (npm run crd) writes
// the committed copies instead; kustomize loads no file outside deploy/, hence the second one.
import { writeFile } from "node:fs/promises";
import { crdYaml } from "../operator/resource/crd.ts";

export const CRD_FILES = [
  new URL("../../crds/apikeys.keyplane.dev.yaml", import.meta.url),
  new URL("../../deploy/crd.yaml", import.meta.url),
];

export async function crdCommand(): Promise<void> {
  process.stdout.write(crdYaml());
}

async function writeCrdFiles(): Promise<void> {
  const yaml = crdYaml();
  for (const file of CRD_FILES) await writeFile(file, yaml);
}

if (import.meta.main) {
  await (process.argv.includes("--write") ? writeCrdFiles() : crdCommand());
}
