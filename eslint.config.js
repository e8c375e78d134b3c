import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The arrows between src/'s folders (docs/architecture.md): domain <- store <- services <- http,
// operator, runtime, cli. A file importing against them fails lint. Top-level files (config.ts,
// logging.ts, version.ts, and keyplane.ts: the composition root, which opens the store and hands it to
// the services) may import any folder; tests are not bound.
const layer = (folder, forbidden, why) => ({
  files: [`src/${folder}/**/*.ts`],
  ignores: ["**/*.test.ts"],
  rules: { "no-restricted-imports": ["error", { patterns: [{ regex: forbidden, message: `${folder}/ ${why}` }] }] },
});

export default tseslint.config(
  { ignores: ["node_modules/", "coverage/", ".keyplane/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  layer("domain", "^\\.\\./", "holds pure rules: it imports nothing of keyplane's outside domain/."),
  // A folder inside domain/ (domain/policy/) reaches domain/'s own files through "../": only "../../" leaves it.
  { ...layer("domain", "^\\.\\./\\.\\./", "holds pure rules: it imports nothing of keyplane's outside domain/."), files: ["src/domain/*/**/*.ts"] },
  layer("store", "^\\.\\./(?!domain/)", "may import only domain/."),
  layer("services", "^\\.\\./(?!(domain|store)/)", "may import only store/ and domain/."),
  ...["http", "operator", "runtime", "cli"].map((folder) => layer(folder, "^\\.\\./store/", "reaches the store only through services/.")),
);
