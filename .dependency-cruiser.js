// The arrows between src/'s layers, and no import circle anywhere in src/ (docs/architecture.md): `npm run
// lint` runs this. Type imports count (tsPreCompilationDeps): a circle of types is still a circle for a
// reader. The top-level files (config.ts, logging.ts, version.ts, webhook-worker.ts and keyplane.ts, the
// composition root) are not bound by the layers; tests are not either, but they may not close a circle.
const layer = (name, folder, allowed, why) => ({
  name,
  comment: `${folder}/ ${why}`,
  severity: "error",
  from: { path: `^src/${folder}/`, pathNot: "\\.test\\.ts$" },
  to: { path: "^src/", pathNot: `^src/(${allowed.join("|")})/` },
});

export default {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import circle: the files in it cannot be read, tested or moved one without the others.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    layer("domain-is-pure", "domain", ["domain"], "holds pure rules: it imports nothing of keyplane's outside domain/."),
    layer("store-over-domain", "store", ["domain", "store"], "may import only domain/."),
    layer("services-over-store", "services", ["domain", "store", "services"], "may import only store/ and domain/."),
    ...["http", "operator", "runtime", "cli"].map((folder) => ({
      name: `${folder}-not-store`,
      comment: `${folder}/ reaches the store only through services/.`,
      severity: "error",
      from: { path: `^src/${folder}/`, pathNot: "\\.test\\.ts$" },
      to: { path: "^src/store/" },
    })),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/console/public/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // Import specifiers end in .ts (allowImportingTsExtensions): resolve them as written.
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
